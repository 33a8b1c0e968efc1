import { isMap, isSeq, type Node, type Pair } from 'yaml';
import { MAX_NESTING, parseYamlSafely } from '../config/safe-yaml.js';
import { unsafeJsonShape } from '../util/json-shape.js';

/** One parsed entry of a task file and where it is. */
export interface RawRecord {
  value: unknown;
  line: number;
  /** The line of a field's key, falling back to the record's line. */
  fieldLine(field: string): number;
}

export interface ParsedFile {
  records: RawRecord[];
  /** File-level problems: `line` is 1-based. */
  issues: { line: number; message: string }[];
}

/** One JSON object per line; blank lines and lines starting with `#` are skipped. */
export function parseJsonl(text: string): ParsedFile {
  const parsed: ParsedFile = { records: [], issues: [] };
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = i + 1;
    const trimmed = raw.trim();
    if (!trimmed || trimmed.startsWith('#')) return;
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch (err) {
      parsed.issues.push({ line, message: `invalid JSON: ${(err as Error).message}` });
      return;
    }
    const unsafe = unsafeJsonShape(value, MAX_NESTING);
    if (unsafe) parsed.issues.push({ line, message: unsafe });
    else parsed.records.push({ value, line, fieldLine: () => line });
  });
  if (!parsed.records.length && !parsed.issues.length) {
    parsed.issues.push({ line: 1, message: 'empty task file: expected one JSON object per line' });
  }
  return parsed;
}

const YAML_SHAPE = 'expected a list of tasks, or a mapping with one key "tasks" holding that list';

/** A YAML (or JSON) list of tasks, or `{tasks: [...]}`; lines come from the parsed nodes. */
export function parseYamlTasks(text: string): ParsedFile {
  const { doc, lines, problems } = parseYamlSafely(text);
  const lineAt = (node: unknown) => lines.linePos((node as Node | null)?.range?.[0] ?? 0).line;
  if (problems.length) return { records: [], issues: problems.map((p) => ({ line: p.line, message: p.message })) };
  let list: unknown = doc.contents;
  if (list === null || (isSeq(list) && !list.items.length))
    return { records: [], issues: [{ line: 1, message: `empty task file: ${YAML_SHAPE}` }] };
  if (isMap(list)) {
    const others = list.items.filter((p) => keyOf(p) !== 'tasks');
    if (others.length)
      return {
        records: [],
        issues: others.map((p) => ({
          line: lineAt(p.key),
          message: `unknown top-level key "${keyOf(p)}"; ${YAML_SHAPE}`,
        })),
      };
    list = list.items[0]?.value ?? null;
    if (list === null || (isSeq(list) && !list.items.length))
      return { records: [], issues: [{ line: 1, message: 'empty task file: "tasks" has no tasks' }] };
  }
  if (!isSeq(list)) return { records: [], issues: [{ line: lineAt(list), message: YAML_SHAPE }] };
  const items = list.items;
  const values = list.toJS(doc) as unknown[];
  const records = items.map((item, i): RawRecord => {
    const line = lineAt(item);
    return {
      value: values[i],
      line,
      fieldLine: (field) => {
        const pair = isMap(item) ? item.items.find((p) => keyOf(p) === field) : undefined;
        return pair ? lineAt(pair.key) : line;
      },
    };
  });
  return { records, issues: [] };
}

function keyOf(pair: Pair): string {
  const key = pair.key as { value?: unknown } | null;
  return String(key && typeof key === 'object' && 'value' in key ? key.value : key);
}
