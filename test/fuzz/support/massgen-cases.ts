import fc from 'fast-check';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseDocument } from 'yaml';
import { FIXTURES } from '../../helpers.js';
import { toJson, toYaml } from './serialize.js';
import { applyTextOp, textOpArb, toBytes, type TextOp } from './text-ops.js';
import { applyTreeOp, nodes, put, treeOpArb, type TreeOp } from './tree-ops.js';
import { keyArb, numberArb, valueArb, type Hostile } from './values.js';

/** One corruption of a copied MassGen log directory. Positions index the sorted files or directories. */
export type FsOp =
  | { op: 'tree'; file: number; ops: TreeOp[] }
  | { op: 'text'; file: number; ops: TextOp[] }
  | { op: 'field'; file: number; kind: 'time' | 'label'; value: Hostile; all: boolean; at: number }
  | { op: 'delete'; entry: number }
  | { op: 'dir' | 'fifo'; file: number }
  | {
      op: 'link';
      file: number;
      to: 'inside' | 'outside' | 'dev-zero' | 'loop' | 'dangling' | 'parent' | 'self';
      other: number;
    }
  | { op: 'stray'; dir: number; name: string; kind: 'dir' | 'file' | 'fifo' | 'link-out' }
  | { op: 'rename'; dir: number; name: string };

export interface MassgenCase {
  logs: 'fixtures' | 'real' | 'both';
  /** --massgen-logs names the massgen_logs directory, one log directory, or the project holding .massgen/. */
  layout: 'logs' | 'one' | 'project';
  ops: FsOp[];
  skipInvalid: boolean;
  withStore: boolean;
}

const NAMES = [
  'turn_0',
  'turn_01',
  'turn_-1',
  'turn_1.5',
  'turn_99999999999999999999',
  'attempt_0',
  'attempt_01',
  'attempt_99999999999999999999',
  'log_x',
  'final',
  'coordination_events.json',
  'vote.json',
  'answer.txt',
];
const LABELS = [
  'agent99.1',
  'agent1.0',
  'agent0.1',
  'agent1.final',
  'agent1.vote1',
  'agent1.1 ',
  'AGENT1.1',
  '__proto__.1',
  'agent1',
  '',
];
const TIMES = ['final', '', '2025-11-04T19:17:20', 'NaN', 946684799, 4102444801, 1762283841.5, -1];

const at = fc.nat({ max: 100_000 });
const fsOpArb: fc.Arbitrary<FsOp> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('tree' as const),
      file: at,
      ops: fc.array(treeOpArb, { minLength: 1, maxLength: 3 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('text' as const),
      file: at,
      ops: fc.array(fc.oneof(textOpArb('json'), textOpArb('yaml')), { minLength: 1, maxLength: 2 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('field' as const),
      file: at,
      kind: fc.constant('time' as const),
      value: fc.oneof(numberArb, fc.constantFrom(...TIMES)),
      all: fc.boolean(),
      at,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('field' as const),
      file: at,
      kind: fc.constant('label' as const),
      value: fc.oneof(keyArb, fc.constantFrom(...LABELS), valueArb),
      all: fc.boolean(),
      at,
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), entry: at }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constantFrom('dir' as const, 'fifo' as const), file: at }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('link' as const),
      file: at,
      to: fc.constantFrom('inside', 'outside', 'dev-zero', 'loop', 'dangling', 'parent', 'self'),
      other: at,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('stray' as const),
      dir: at,
      name: fc.oneof(fc.constantFrom(...NAMES), keyArb),
      kind: fc.constantFrom('dir', 'file', 'fifo', 'link-out'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('rename' as const), dir: at, name: fc.constantFrom(...NAMES) }) },
);

export const massgenCaseArb: fc.Arbitrary<MassgenCase> = fc.record({
  logs: fc.constantFrom('fixtures', 'real', 'both'),
  layout: fc.constantFrom('logs', 'logs', 'one', 'project'),
  ops: fc.array(fsOpArb, { minLength: 1, maxLength: 4 }),
  skipInvalid: fc.boolean(),
  withStore: fc.boolean(),
});

/** Copies the chosen fixture logs into the case directory; returns the logs root and the --massgen-logs argument. */
export function layoutLogs(dir: string, c: MassgenCase): { root: string; arg: string } {
  const rel = c.layout === 'project' ? path.join('.massgen', 'massgen_logs') : 'massgen_logs';
  const root = path.join(dir, rel);
  const sources =
    c.logs === 'both' ? ['massgen-logs', 'massgen-real'] : [c.logs === 'real' ? 'massgen-real' : 'massgen-logs'];
  for (const s of sources) fs.cpSync(path.join(FIXTURES, s), root, { recursive: true });
  const first = fs.readdirSync(root).sort()[0]!;
  return { root, arg: c.layout === 'project' ? '.' : c.layout === 'one' ? path.join(rel, first) : rel };
}

function entries(root: string, want: 'file' | 'dir' | 'any'): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const d of fs
      .readdirSync(path.join(root, rel), { withFileTypes: true })
      .sort((a, b) => a.name.localeCompare(b.name))) {
      const r = path.join(rel, d.name);
      if (d.isDirectory()) {
        if (want !== 'file') out.push(r);
        walk(r);
      } else if (d.isFile() && want !== 'dir') out.push(r);
    }
  };
  walk('');
  return out;
}

const parseTree = (file: string, text: string): unknown =>
  file.endsWith('.yaml') ? parseDocument(text).toJS({ maxAliasCount: 1000 }) : JSON.parse(text);
const renderTree = (file: string, tree: unknown) => (file.endsWith('.yaml') ? toYaml(tree) : toJson(tree, 2));
/** Whether anything is at p, a dangling link included. */
function present(p: string): boolean {
  try {
    fs.lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

const FIELDS = { time: /time/i, label: /label|agent_id|voted_for|winner/i };

/** Applies one op; returns the log-relative paths it touched (for messages that name a file). */
export function applyFsOp(root: string, op: FsOp, outside: string): string[] {
  const files = entries(root, 'file');
  const pick = (xs: string[], i: number) => xs[i % Math.max(1, xs.length)];
  const abs = (r: string) => path.join(root, r);
  switch (op.op) {
    case 'tree':
    case 'field': {
      const file = pick(
        files.filter((f) => /\.(json|yaml)$|context\.txt$/.test(f)),
        op.file,
      );
      if (!file) return [];
      let tree: unknown;
      try {
        tree = parseTree(file, fs.readFileSync(abs(file), 'utf8'));
      } catch {
        return [];
      }
      if (op.op === 'tree') for (const t of op.ops) tree = applyTreeOp(tree, t);
      else {
        const hits = nodes(tree).filter((n) => n.path.length && FIELDS[op.kind].test(String(n.path.at(-1))));
        for (const n of op.all ? hits : hits.slice(op.at % Math.max(1, hits.length)).slice(0, 1)) {
          // An earlier hit may have replaced an ancestor of this one with a scalar.
          let parent: unknown = tree;
          for (const k of n.path.slice(0, -1))
            parent = typeof parent === 'object' && parent !== null ? (parent as Record<string, unknown>)[k] : undefined;
          if (typeof parent === 'object' && parent !== null)
            put(parent as Record<string, unknown>, n.path.at(-1)!, op.value);
        }
      }
      fs.writeFileSync(abs(file), renderTree(file, tree));
      return [file];
    }
    case 'text': {
      const file = pick(files, op.file);
      if (!file) return [];
      let text = fs.readFileSync(abs(file), 'utf8');
      for (const t of op.ops) text = applyTextOp(text, t);
      fs.writeFileSync(abs(file), toBytes(text));
      return [file];
    }
    case 'delete': {
      const entry = pick(entries(root, 'any'), op.entry);
      if (entry) fs.rmSync(abs(entry), { recursive: true, force: true });
      return entry ? [entry] : [];
    }
    case 'dir':
    case 'fifo': {
      const file = pick(files, op.file);
      if (!file) return [];
      fs.rmSync(abs(file));
      if (op.op === 'dir') fs.mkdirSync(abs(file));
      else execFileSync('mkfifo', [abs(file)]);
      return [file];
    }
    case 'link': {
      const file = pick(files, op.file);
      if (!file) return [];
      fs.rmSync(abs(file));
      const target = {
        inside: path.relative(path.dirname(abs(file)), abs(pick(files, op.other)!)),
        outside,
        'dev-zero': '/dev/zero',
        loop: `${path.basename(file)}.loop`,
        dangling: 'no-such-file',
        parent: '..',
        self: path.basename(file),
      }[op.to];
      fs.symlinkSync(target, abs(file));
      if (op.to === 'loop') fs.symlinkSync(path.basename(file), `${abs(file)}.loop`);
      return [file];
    }
    case 'rename': {
      const dir = pick(entries(root, 'dir'), op.dir);
      const target = dir && path.join(path.dirname(abs(dir)), op.name);
      if (!dir || !target || present(target)) return [];
      fs.renameSync(abs(dir), target);
      return [dir];
    }
    case 'stray': {
      const dir = pick(entries(root, 'dir'), op.dir) ?? '';
      const target = path.join(abs(dir), op.name.replace(/[/\0]/g, '_') || '_');
      if (present(target)) return [];
      if (op.kind === 'dir') fs.mkdirSync(target);
      else if (op.kind === 'file') fs.writeFileSync(target, '{"not": "massgen"}');
      else if (op.kind === 'fifo') execFileSync('mkfifo', [target]);
      else fs.symlinkSync(path.dirname(outside), target);
      return [path.relative(root, target)];
    }
  }
}
