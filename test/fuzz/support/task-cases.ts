import fc from 'fast-check';
import { parseDocument } from 'yaml';
import { toJson, toJsonl, toYaml } from './serialize.js';
import { applyTextOp, textOpArb, type Format, type TextOp } from './text-ops.js';
import { applyTreeOp, depthArb, fewOps, put, treeOpArb, type TreeOp } from './tree-ops.js';
import { numberArb, type Hostile } from './values.js';

/** Mutations that task files in particular invite: an id used twice, deep metadata, a huge reference, a long prompt. */
export type TaskOp =
  | { op: 'dupId'; from: number; to: number }
  | { op: 'deepMeta'; record: number; depth: number; list: boolean }
  | { op: 'reference'; record: number; value: Hostile }
  | { op: 'longPrompt'; record: number; chars: number };

export interface TaskCase {
  base: number;
  /** Written under another extension when set: the same text read by another parser, or refused. */
  ext: string | null;
  task: TaskOp[];
  tree: TreeOp[];
  text: TextOp[];
  withStore: boolean;
}

const taskOpArb: fc.Arbitrary<TaskOp> = fc.oneof(
  fc.record({ op: fc.constant('dupId' as const), from: fc.nat(), to: fc.nat() }),
  fc.record({
    op: fc.constant('deepMeta' as const),
    record: fc.nat(),
    depth: fc.oneof(depthArb, fc.constant(1000)),
    list: fc.boolean(),
  }),
  fc.record({ op: fc.constant('reference' as const), record: fc.nat(), value: numberArb }),
  // At tasks.max_prompt_chars' default, one over, and longer than any task line may be written.
  fc.record({
    op: fc.constant('longPrompt' as const),
    record: fc.nat(),
    chars: fc.constantFrom(100_000, 100_001, 700_000),
  }),
);

export const taskCaseArb: fc.Arbitrary<TaskCase> = fc.record({
  base: fc.nat(),
  ext: fc.oneof(
    { weight: 8, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.constantFrom('.jsonl', '.ndjson', '.yaml', '.yml', '.json', '.csv', '', '.JSONL') },
  ),
  task: fewOps(taskOpArb, 3, 2, 1),
  tree: fewOps(treeOpArb, 2, 4, 1),
  text: fewOps(fc.oneof(textOpArb('jsonl'), textOpArb('yaml')), 6, 2, 1),
  withStore: fc.boolean(),
});

export function formatOf(file: string): Format {
  return file.endsWith('.jsonl') ? 'jsonl' : file.endsWith('.json') ? 'json' : 'yaml';
}

function parse(text: string, format: Format): unknown {
  if (format !== 'jsonl') return parseDocument(text).toJS();
  return text
    .split('\n')
    .filter((l) => l.trim() && !l.trim().startsWith('#'))
    .map((l) => JSON.parse(l) as unknown);
}

function records(tree: unknown): Record<string, unknown>[] {
  const list = Array.isArray(tree) ? tree : (tree as { tasks?: unknown }).tasks;
  return Array.isArray(list)
    ? list.filter((r): r is Record<string, unknown> => typeof r === 'object' && r !== null && !Array.isArray(r))
    : [];
}

function applyTaskOp(tree: unknown, op: TaskOp): void {
  const rs = records(tree);
  if (!rs.length) return;
  const at = (i: number) => rs[i % rs.length]!;
  if (op.op === 'dupId') put(at(op.to), 'id', at(op.from).id);
  else if (op.op === 'reference') put(at(op.record), 'reference', op.value);
  else if (op.op === 'longPrompt') put(at(op.record), 'prompt', 'What is 6 x 7? '.padEnd(op.chars, 'x'));
  else {
    let v: unknown = 'leaf';
    for (let i = 0; i < op.depth; i++) v = op.list ? [v] : { k: v };
    put(at(op.record), 'metadata', { nested: v });
  }
}

/** The mutated task file's text; `format` is the base file's. */
export function mutateTaskFile(base: string, format: Format, c: TaskCase): string {
  let out = base;
  if (c.task.length || c.tree.length) {
    let tree = parse(base, format);
    for (const op of c.task) applyTaskOp(tree, op);
    for (const op of c.tree) tree = applyTreeOp(tree, op);
    out =
      format === 'jsonl'
        ? toJsonl(Array.isArray(tree) ? tree : [tree])
        : format === 'json'
          ? toJson(tree, 2)
          : toYaml(tree);
  }
  for (const op of c.text) out = applyTextOp(out, op);
  return out;
}
