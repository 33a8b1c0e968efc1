import { isMap, isSeq, LineCounter, type Document, type Node } from 'yaml';
import { parseYamlSafely } from './safe-yaml.js';

export type ConfigPath = readonly (string | number)[];

/** A parsed YAML file that can say where any config path came from. */
export class YamlSource {
  private constructor(
    readonly file: string,
    private readonly doc: Document.Parsed | null,
    private readonly lines: LineCounter,
  ) {}

  static parse(file: string, text: string): { source: YamlSource; value: unknown; errors: string[] } {
    const { doc, lines, problems } = parseYamlSafely(text);
    const source = new YamlSource(file, doc, lines);
    const errors = problems.map((p) => `${file}:${p.line}:${p.col}: ${p.message}`);
    return { source, value: errors.length ? undefined : (doc.toJS() ?? {}), errors };
  }

  static embedded(label: string): YamlSource {
    return new YamlSource(label, null, new LineCounter());
  }

  /** `file:line:col` of the deepest node along `path` (the key itself when it names an unknown key). */
  locate(path: ConfigPath, key?: string): string {
    if (!this.doc) return this.file;
    let node: unknown = this.doc.contents;
    let offset = rangeStart(node) ?? 0;
    const parts = key === undefined ? path : [...path, key];
    for (const [i, part] of parts.entries()) {
      const next = child(node, part, key !== undefined && i === parts.length - 1);
      if (!next) break;
      offset = next.offset;
      node = next.node;
    }
    const pos = this.lines.linePos(offset);
    return `${this.file}:${pos.line}:${pos.col}`;
  }
}

function child(node: unknown, part: string | number, atKey = false): { node: unknown; offset: number } | undefined {
  if (isMap(node)) {
    const pair = node.items.find((p) => String((p.key as { value?: unknown } | null)?.value ?? p.key) === String(part));
    if (!pair) return undefined;
    const keyOffset = rangeStart(pair.key);
    const valOffset = rangeStart(pair.value);
    return { node: pair.value, offset: (atKey ? keyOffset : (valOffset ?? keyOffset)) ?? 0 };
  }
  if (isSeq(node) && typeof part === 'number') {
    const item = node.items[part];
    const offset = rangeStart(item);
    return offset === undefined ? undefined : { node: item, offset };
  }
  return undefined;
}

function rangeStart(node: unknown): number | undefined {
  return (node as Node | null)?.range?.[0];
}
