import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUILTIN_SUITES, configSchema, DIFFICULTIES } from '../../src/config/schema.js';
import { exactMatch } from '../../src/rewards/exact.js';
import { numericMatch } from '../../src/rewards/numeric.js';
import { tasksForRun } from '../../src/tasks/for-run.js';
import { getSuite, loadTasks } from '../../src/tasks/index.js';
import { ROOT } from '../helpers.js';

// bench/transfer/tasks.jsonl: hand-written tasks that must never be trained on (bench/transfer/README.md).
const FILE = path.join(ROOT, 'bench', 'transfer', 'tasks.jsonl');
const PER_AREA = 20;
const NGRAM = 6;
const PER_LEVEL = 300;

const config = configSchema.parse({ tasks: { sources: [{ file: FILE }] } });
const tasks = loadTasks(config.tasks, ROOT);

const words = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .split(' ')
    .filter(Boolean);

function ngrams(text: string, n = NGRAM): string[] {
  const w = words(text);
  return Array.from({ length: Math.max(0, w.length - n + 1) }, (_, i) => w.slice(i, i + n).join(' '));
}

/** Lines of a repo file that would make the transfer file a source of training tasks. */
function trainingUses(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => /transfer\/tasks\.jsonl/.test(line))
    .filter((line) => /\bsources\b|\bfile\s*:|\bcollect\b|\btrain\b/i.test(line));
}

function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : filesUnder(p);
    return /\.(mjs|js|ts|py|ya?ml|json|md|sh)$/.test(e.name) ? [p] : [];
  });
}

describe('the held-out transfer task file', () => {
  it('loads through the task loader, every task checkable, 20 in each skill area of the built-in suites', () => {
    expect(tasks).toHaveLength(PER_AREA * BUILTIN_SUITES.length);
    const areas = new Map<string, number>();
    for (const t of tasks) {
      const area = t.category?.split('/')[0] ?? '';
      areas.set(area, (areas.get(area) ?? 0) + 1);
      expect(t.category, t.id).toMatch(/^transfer_[a-z_]+\/[a-z_]+$/);
      expect(t.reference, t.id).toMatch(/\S/);
      expect(['number', 'string'], t.id).toContain(t.metadata.answer_type);
      if (t.metadata.answer_type === 'number') {
        expect(Number.isFinite(Number(t.reference)), t.id).toBe(true);
        expect(typeof t.metadata.tolerance, t.id).toBe('number');
      }
    }
    expect(Object.fromEntries(areas)).toEqual(
      Object.fromEntries(BUILTIN_SUITES.map((s) => [`transfer_${s}`, PER_AREA])),
    );
  });

  it('scores its own reference as correct, so every answer format is one the scorer reads', () => {
    for (const t of tasks) {
      const scorer = t.metadata.answer_type === 'number' ? numericMatch : exactMatch;
      expect(scorer(t.reference!, t.reference!, t, config.rewards)?.value, t.id).toBe(1);
    }
  });

  it('runs whole under --split all, as the efficacy benchmark evaluates it', () => {
    const all = tasksForRun(configSchema.parse({}).tasks, ROOT, { spec: FILE, split: 'all' });
    expect(all.map((t) => t.id).sort()).toEqual(tasks.map((t) => t.id).sort());
  });

  it(`shares no ${NGRAM} consecutive words with any built-in suite prompt at any level`, () => {
    const builtin = new Map<string, string>();
    for (const name of BUILTIN_SUITES)
      for (const difficulty of DIFFICULTIES)
        for (const t of getSuite(name).generate(PER_LEVEL, 7, { difficulty }))
          for (const g of ngrams(t.prompt)) builtin.set(g, `${name}@${difficulty}`);
    expect(builtin.size).toBeGreaterThan(1000);
    const shared = tasks.flatMap((t) =>
      ngrams(t.prompt).flatMap((g) => (builtin.has(g) ? [`${t.id}: "${g}" (${builtin.get(g)})`] : [])),
    );
    expect(shared).toEqual([]);
  });

  it('is no training source of any config, script, bench or doc in the repository', () => {
    expect(trainingUses('tasks: { sources: [{ file: bench/transfer/tasks.jsonl }] }')).toHaveLength(1);
    expect(trainingUses('    - file: ../transfer/tasks.jsonl')).toHaveLength(1);
    expect(trainingUses('massgen-rl collect --tasks bench/transfer/tasks.jsonl')).toHaveLength(1);
    expect(trainingUses("evaluate(rt, { tasks: 'bench/transfer/tasks.jsonl', split: 'all' })")).toEqual([]);

    const files = [
      ...['bench', 'scripts', 'docs', 'templates', 'schema'].flatMap((d) => filesUnder(path.join(ROOT, d))),
      path.join(ROOT, 'README.md'),
    ];
    expect(files.length).toBeGreaterThan(10);
    const uses = files.flatMap((f) =>
      trainingUses(fs.readFileSync(f, 'utf8')).map((line) => `${path.relative(ROOT, f)}: ${line.trim()}`),
    );
    expect(uses).toEqual([]);
  });
});
