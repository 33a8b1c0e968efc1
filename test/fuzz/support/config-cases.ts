import fc from 'fast-check';
import path from 'node:path';
import { parseDocument } from 'yaml';
import { toYaml } from './serialize.js';
import { applyTextOp, textOpArb, type TextOp } from './text-ops.js';
import { applyTreeOp, fewOps, treeOpArb, type TreeOp } from './tree-ops.js';
import { FAILING_MODES, type FailingMode } from './world.js';

/** One mutated config: a base, structural and text mutations, and the command it is run with. */
export interface ConfigCase {
  base: number;
  tree: TreeOp[];
  text: TextOp[];
  command: 'collect' | 'status';
  splitAll: boolean;
  withStore: boolean;
  /** The endpoint the models point at: the scripted team, or one that fails every call. */
  serve: 'ok' | FailingMode;
}

export const configCaseArb: fc.Arbitrary<ConfigCase> = fc.record({
  base: fc.nat(),
  tree: fewOps(treeOpArb, 1, 5, 2),
  text: fewOps(textOpArb('yaml'), 6, 2, 1),
  command: fc.constantFrom('collect', 'collect', 'collect', 'status'),
  splitAll: fc.boolean(),
  withStore: fc.boolean(),
  serve: fc.oneof(
    { weight: 4, arbitrary: fc.constant('ok' as const) },
    { weight: 1, arbitrary: fc.constantFrom(...FAILING_MODES) },
  ),
});

export function configArgs(c: ConfigCase): string[] {
  return c.command === 'status' ? ['status'] : ['collect', '--n', '1', ...(c.splitAll ? ['--split', 'all'] : [])];
}

/** The mutated config's text. Structural mutations re-render the file; text mutations keep its comments. */
export function mutateYaml(base: string, tree: TreeOp[], text: TextOp[]): string {
  let out = base;
  if (tree.length) {
    let value: unknown = parseDocument(base).toJS();
    for (const op of tree) value = applyTreeOp(value, op);
    out = toYaml(value);
  }
  for (const op of text) out = applyTextOp(out, op);
  return out;
}

const WRITTEN: (string | number)[][] = [
  ['project', 'data_dir'],
  ['store', 'path'],
  ['train', 'venv'],
];

/**
 * Keeps what a run writes inside its case directory: a mutated data_dir or store.path that would resolve
 * outside it (or depends on the environment) is replaced. Text the CLI would refuse anyway is left as it is.
 */
export function confine(text: string): string {
  let doc;
  try {
    doc = parseDocument(text, { uniqueKeys: false });
  } catch {
    return text; // too deep even to parse: refused for its nesting, before any path is used
  }
  if (doc.errors.length) return text;
  let changed = false;
  for (const p of WRITTEN) {
    let value: unknown;
    try {
      value = doc.getIn(p);
    } catch {
      continue;
    }
    if (typeof value !== 'string') continue;
    const rel = path.relative('/case', path.resolve('/case', value));
    if (value.includes('$') || rel.startsWith('..') || path.isAbsolute(rel)) {
      doc.setIn(p, 'confined');
      changed = true;
    }
  }
  return changed ? String(doc) : text;
}
