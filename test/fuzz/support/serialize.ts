import { stringify } from 'yaml';
import { put } from './tree-ops.js';
import { RawText } from './values.js';

/** Mutated trees back to text; RawText values are written unquoted, as they are. */
const PLACEHOLDER = /["']?RAWxx(\d+)xxRAW["']?/g;

function withPlaceholders(tree: unknown, raws: string[]): unknown {
  if (tree instanceof RawText) return `RAWxx${raws.push(tree.text) - 1}xxRAW`;
  if (Array.isArray(tree)) return tree.map((v) => withPlaceholders(v, raws));
  if (typeof tree !== 'object' || tree === null) return tree;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(tree)) put(out, k, withPlaceholders((tree as Record<string, unknown>)[k], raws));
  return out;
}

class Literal {
  constructor(readonly text: string) {}
}

/** Compact JSON of a tree of any depth: JSON.stringify and the YAML writer recurse, and a mutated tree can nest thousands deep. */
function encode(tree: unknown): string {
  let out = '';
  const stack: unknown[] = [tree];
  while (stack.length) {
    const v = stack.pop();
    if (v instanceof Literal || v instanceof RawText) out += v.text;
    else if (Array.isArray(v)) {
      stack.push(new Literal(']'));
      for (let i = v.length - 1; i >= 0; i--) stack.push(v[i], ...(i ? [new Literal(',')] : []));
      stack.push(new Literal('['));
    } else if (v && typeof v === 'object') {
      const keys = Object.keys(v);
      stack.push(new Literal('}'));
      for (let i = keys.length - 1; i >= 0; i--)
        stack.push(
          (v as Record<string, unknown>)[keys[i]!],
          new Literal(`${JSON.stringify(keys[i])}:`),
          ...(i ? [new Literal(',')] : []),
        );
      stack.push(new Literal('{'));
    } else out += JSON.stringify(v) ?? 'null';
  }
  return out;
}

function render(tree: unknown, write: (t: unknown) => string): string {
  try {
    const raws: string[] = [];
    const text = write(withPlaceholders(tree, raws));
    return text.replace(PLACEHOLDER, (_, i: string) => raws[Number(i)]!);
  } catch {
    return encode(tree); // too deep for the writer; JSON is YAML too
  }
}

export function toYaml(tree: unknown): string {
  return render(tree, (t) => stringify(t, { aliasDuplicateObjects: false, lineWidth: 0 }));
}

export function toJson(tree: unknown, indent?: number): string {
  return render(tree, (t) => JSON.stringify(t, null, indent) ?? 'null');
}

/** One record per line; a record that is not an object is written as it is, as a hand-edited file can have it. */
export function toJsonl(records: unknown[]): string {
  return `${records.map((r) => toJson(r)).join('\n')}\n`;
}
