import { describe, expect, it } from 'vitest';
import { BUILTIN_SUITES, configSchema } from '../../src/config/schema.js';
import { tasksForRun } from '../../src/tasks/for-run.js';
import {
  getSuite,
  heldOutTemplates,
  loadTasks,
  splitOf,
  splitPoint,
  usesHeldOutTemplate,
  type Difficulty,
  type TasksConfig,
} from '../../src/tasks/index.js';
import { configIn, configIssues, tempDir } from '../helpers.js';

const SALT = 'massgen-rl';
const md = (t: { metadata: Record<string, unknown> }) => t.metadata as Record<string, any>;
const tasksConfig = (sources: TasksConfig['sources'], split: Partial<TasksConfig['split']> = {}): TasksConfig =>
  configSchema.parse({ tasks: { sources, split } }).tasks;
const LEVELS = BUILTIN_SUITES.flatMap((suite) =>
  ([0, 1, 2, 3] as const).map((difficulty) => [suite, difficulty] as const),
);

describe('heldOutTemplates', () => {
  it("holds out about the fraction of each kind's templates, lowest hash first, and always leaves one for train", () => {
    const four = { k: ['0', '1', '2', '3'] };
    for (let s = 0; s < 50; s++) {
      const salt = `salt-${s}`;
      const held = heldOutTemplates('demo', four, 0.25, salt);
      const lowest = [...four.k].sort((a, b) => splitPoint(`demo/k/${a}`, salt) - splitPoint(`demo/k/${b}`, salt))[0];
      expect(held).toEqual({ k: [lowest] });
      for (const fraction of [0.01, 0.3, 0.5, 0.75, 0.99]) {
        for (const names of [['a', 'b'], ['a', 'b', 'c'], four.k]) {
          const h = heldOutTemplates('demo', { k: names }, fraction, salt).k ?? [];
          expect(h.length).toBeLessThan(names.length);
          expect(Math.abs(h.length - fraction * names.length)).toBeLessThan(1);
        }
      }
    }
    // Rounded up or down by the kind's own hash: on average the fraction.
    const kinds = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`kind${i}`, ['a', 'b']]));
    const held = Object.values(heldOutTemplates('demo', kinds, 0.25, SALT)).flat().length;
    expect(held / 800).toBeGreaterThan(0.2);
    expect(held / 800).toBeLessThan(0.3);
  });

  it('holds out nothing of a kind with one template, nor anything at fraction 0', () => {
    expect(heldOutTemplates('demo', { only: ['0'], two: ['0', '1'] }, 0.9, SALT)).toEqual({
      two: [expect.any(String)],
    });
    for (const [suite, level] of LEVELS)
      expect(heldOutTemplates(suite, getSuite(suite).templates(level), 0, SALT)).toEqual({});
  });

  it('depends on the salt and on the suite, kind and template names, not on the level', () => {
    const t = getSuite('arithmetic').templates(2);
    const salts = Array.from({ length: 20 }, (_, i) =>
      JSON.stringify(heldOutTemplates('arithmetic', t, 0.25, `s${i}`)),
    );
    expect(new Set(salts).size).toBeGreaterThan(5);
    expect(heldOutTemplates('arithmetic', getSuite('arithmetic').templates(1), 0.25, SALT)).toEqual(
      heldOutTemplates('arithmetic', t, 0.25, SALT),
    );
    expect(heldOutTemplates('arithmetic', t, 0.25, SALT)).toEqual({
      addition: ['0'],
      subtraction: ['3'],
      multiplication: ['2'],
      division: ['2'],
    });
  });
});

describe.each(LEVELS)('loadTasks with held-out templates: %s level %i', (suite, difficulty) => {
  const templates = getSuite(suite).templates(difficulty);
  const held = heldOutTemplates(suite, templates, 0.25, SALT);
  const tasks = loadTasks(tasksConfig([{ suite, n: 600, seed: 3, difficulty: difficulty as Difficulty }]), '.');
  const templateOf = (t: (typeof tasks)[number]) => `${md(t).kind}/${md(t).template ?? '0'}`;

  it('puts every task of a held-out template in eval and splits the others by id', () => {
    for (const t of tasks) {
      if (usesHeldOutTemplate(t, held)) expect(t.split).toBe('eval');
      else expect(t.split).toBe(splitOf(t.id, 0.2, SALT));
    }
    const train = new Set(tasks.filter((t) => t.split === 'train').map(templateOf));
    for (const [kind, names] of Object.entries(held))
      for (const name of names) expect(train.has(`${kind}/${name}`)).toBe(false);
  });

  it('keeps a train template in every kind, and holds out some template wherever a kind has several', () => {
    const train = new Set(tasks.filter((t) => t.split === 'train').map(templateOf));
    for (const [kind, names] of Object.entries(templates)) {
      expect(names.some((n) => train.has(`${kind}/${n}`))).toBe(true);
    }
    const several = Object.values(templates).some((names) => names.length > 1);
    expect(tasks.some((t) => usesHeldOutTemplate(t, held))).toBe(several);
  });
});

describe('tasks.split.holdout_templates in loadTasks', () => {
  it('defaults to 0.25, and 0 splits every task by id', () => {
    expect(configSchema.parse({}).tasks.split.holdout_templates).toBe(0.25);
    const all = loadTasks(tasksConfig([{ suite: 'arithmetic', n: 300, seed: 1 }], { holdout_templates: 0 }), '.');
    expect(all.map((t) => t.split)).toEqual(all.map((t) => splitOf(t.id, 0.2, SALT)));
    const withHoldout = loadTasks(tasksConfig([{ suite: 'arithmetic', n: 300, seed: 1 }]), '.');
    expect(withHoldout.filter((t) => t.split === 'eval').length).toBeGreaterThan(
      all.filter((t) => t.split === 'eval').length + 40,
    );
  });

  it('leaves tasks from files alone, even with a held-out kind and template in their metadata', () => {
    const lines = Array.from({ length: 60 }, (_, i) =>
      JSON.stringify({
        id: `f${i}`,
        prompt: 'What is 1 plus 1?',
        reference: '2',
        metadata: { suite: 'arithmetic', kind: 'addition', template: 0 },
      }),
    );
    const dir = tempDir({ 'tasks.jsonl': lines.join('\n') });
    const tasks = loadTasks(tasksConfig([{ file: 'tasks.jsonl' }, { suite: 'arithmetic', n: 100, seed: 1 }]), dir);
    const fromFile = tasks.filter((t) => t.source === 'tasks.jsonl');
    expect(fromFile.map((t) => t.split)).toEqual(fromFile.map((t) => splitOf(t.id, 0.2, SALT)));
    expect(fromFile.some((t) => t.split === 'train')).toBe(true);
    expect(
      tasks.some(
        (t) =>
          t.source === 'suite:arithmetic'
          && md(t).kind === 'addition'
          && md(t).template === 0
          && splitOf(t.id, 0.2, SALT) === 'train'
          && t.split === 'eval',
      ),
    ).toBe(true);
  });

  it('--tasks SUITE generates enough for --n after the holdout', () => {
    const base = configSchema.parse({}).tasks;
    for (const suite of BUILTIN_SUITES) {
      for (const split of ['train', 'eval'] as const)
        expect(tasksForRun(base, '.', { spec: suite, n: 40, split })).toHaveLength(40);
    }
  });
});

describe('config validation', () => {
  it('names tasks.split.holdout_templates for a value outside [0, 1)', () => {
    expect(configIssues('tasks:\n  split:\n    holdout_templates: 1\n')).toEqual([
      expect.stringMatching(/^tasks\.split\.holdout_templates: must be below 1 .*\(massgen-rl\.yaml:3:24\)$/),
    ]);
    expect(configIssues('tasks:\n  split:\n    holdout_templates: -0.1\n')).toEqual([
      expect.stringMatching(/^tasks\.split\.holdout_templates: .*>=0/),
    ]);
    expect(configIssues('tasks:\n  split:\n    holdout_templates: most\n')).toEqual([
      expect.stringMatching(/^tasks\.split\.holdout_templates: .*expected number/),
    ]);
    expect(configIn('tasks:\n  split:\n    holdout_templates: 0\n').config.tasks.split.holdout_templates).toBe(0);
  });

  it('names tasks.sources[i].difficulty for a level that does not exist', () => {
    for (const bad of ['4', '-1', '"1"', '1.5']) {
      expect(
        configIssues(`tasks:\n  sources:\n    - suite: multi_step\n    - { suite: arithmetic, difficulty: ${bad} }\n`),
      ).toEqual([
        expect.stringMatching(/^tasks\.sources\[1\]\.difficulty: must be 0, 1, 2 or 3 \(massgen-rl\.yaml:4:\d+\)$/),
      ]);
    }
    expect(configIn('tasks:\n  sources:\n    - { suite: multi_step, difficulty: 1 }\n').config.tasks.sources).toEqual([
      { suite: 'multi_step', n: 50, seed: 1, difficulty: 1 },
    ]);
  });
});
