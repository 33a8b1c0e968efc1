import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { UserError } from '../../src/errors.js';
import {
  getSuite,
  heldOutTemplates,
  loadTasks,
  readTaskFile,
  splitOf,
  TaskLoadError,
  usesHeldOutTemplate,
  type TasksConfig,
} from '../../src/tasks/index.js';
import { FIXTURES, tempDir } from '../helpers.js';

const DIR = path.join(FIXTURES, 'tasks');
/** How loadTasks names a fixture: relative to the working directory. */
const shown = (file: string) => path.relative(process.cwd(), path.join(DIR, file));
const read = (file: string) => readTaskFile(path.join(DIR, file), file);
const config = (sources: TasksConfig['sources'], evalFraction = 0.2): TasksConfig => ({
  sources,
  split: { eval_fraction: evalFraction, salt: 'massgen-rl', holdout_templates: 0.25 },
});

function loadIssues(sources: TasksConfig['sources']): string[] {
  try {
    loadTasks(config(sources), DIR);
  } catch (err) {
    expect(err).toBeInstanceOf(TaskLoadError);
    return (err as TaskLoadError).issues;
  }
  throw new Error('expected loadTasks to fail');
}

describe('task files: happy paths', () => {
  it('reads JSONL, skipping blank and comment lines, numbers and null as the spec says', () => {
    const r = read('good.jsonl');
    expect(r.issues).toEqual([]);
    expect(r.tasks).toEqual([
      {
        where: 'good.jsonl:2',
        task: {
          id: 'geo-1',
          prompt: 'What is the capital of France?',
          reference: 'Paris',
          category: 'geography',
          metadata: {},
          source: 'good.jsonl',
        },
      },
      {
        where: 'good.jsonl:4',
        task: {
          id: 'math-1',
          prompt: 'What is 6 times 7?',
          reference: '42',
          metadata: { answer_type: 'number', tolerance: 0 },
          source: 'good.jsonl',
        },
      },
      {
        where: 'good.jsonl:6',
        task: { id: 'open-1', prompt: 'Write a haiku about rain.', metadata: {}, source: 'good.jsonl' },
      },
    ]);
    expect('reference' in r.tasks[2]!.task).toBe(false);
  });

  it('reads a YAML list, {tasks: [...]} and a JSON list', () => {
    expect(read('good.yaml')).toEqual({
      issues: [],
      tasks: [
        {
          where: 'good.yaml:2',
          task: {
            id: 'yaml-1',
            prompt: 'Reverse the word "stone".\nReply with the word only.\n',
            reference: 'enots',
            category: 'strings',
            metadata: {},
            source: 'good.yaml',
          },
        },
        {
          where: 'good.yaml:9',
          task: {
            id: 'yaml-2',
            prompt: 'How many legs does a spider have?',
            reference: '8',
            metadata: { answer_type: 'number' },
            source: 'good.yaml',
          },
        },
      ],
    });
    expect(read('wrapped.yaml').tasks.map((t) => [t.where, t.task.id, t.task.reference])).toEqual([
      ['wrapped.yaml:2', 'wrapped-1', undefined],
      ['wrapped.yaml:3', 'wrapped-2', '2.5'],
    ]);
    expect(read('list.json').tasks.map((t) => [t.where, t.task.id])).toEqual([
      ['list.json:2', 'json-1'],
      ['list.json:3', 'json-2'],
    ]);
  });

  it('accepts a byte-order mark and CRLF line ends', () => {
    const dir = tempDir({ 'win.jsonl': '\uFEFF{"id": "w1", "prompt": "a"}\r\n\r\n{"id": "w2", "prompt": "b"}\r\n' });
    expect(readTaskFile(path.join(dir, 'win.jsonl'), 'win.jsonl').tasks.map((t) => [t.where, t.task.id])).toEqual([
      ['win.jsonl:1', 'w1'],
      ['win.jsonl:3', 'w2'],
    ]);
  });

  it('loads the embedded default sources', () => {
    const tasks = loadTasks(configSchema.parse({}).tasks, DIR);
    expect(tasks).toHaveLength(50);
    expect(tasks[0]!.id).toBe('suite:arithmetic@0:1:0');
    // A quarter of the arithmetic templates are eval-only (tasks-holdout.test.ts); the rest split by id.
    const held = heldOutTemplates('arithmetic', getSuite('arithmetic').templates(0), 0.25, 'massgen-rl');
    expect(
      tasks.every((t) => t.split === (usesHeldOutTemplate(t, held) ? 'eval' : splitOf(t.id, 0.2, 'massgen-rl'))),
    ).toBe(true);
    expect(tasks.filter((t) => usesHeldOutTemplate(t, held)).length).toBeGreaterThan(5);
  });

  it('combines sources in order, each task with its split and source', () => {
    const tasks = loadTasks(
      config(
        [{ suite: 'string_transform', n: 3, seed: 9, difficulty: 2 }, { file: 'good.jsonl' }, { file: 'wrapped.yaml' }],
        0.5,
      ),
      DIR,
    );
    expect(tasks.map((t) => t.id)).toEqual([
      'suite:string_transform:9:0',
      'suite:string_transform:9:1',
      'suite:string_transform:9:2',
      'geo-1',
      'math-1',
      'open-1',
      'wrapped-1',
      'wrapped-2',
    ]);
    expect(tasks.map((t) => t.source)).toEqual([
      ...Array(3).fill('suite:string_transform'),
      ...Array(3).fill('good.jsonl'),
      ...Array(2).fill('wrapped.yaml'),
    ]);
    expect(tasks.map((t) => t.split)).toEqual(tasks.map((t) => splitOf(t.id, 0.5, 'massgen-rl')));
  });
});

describe('task files: every problem at once, with its line', () => {
  it('reports each JSONL problem on its own line', () => {
    const issues = loadIssues([{ file: 'bad.jsonl' }]);
    const f = shown('bad.jsonl');
    expect(issues[0]).toMatch(new RegExp(`^${f}:2: invalid JSON: `));
    expect(issues.slice(1)).toEqual([
      `${f}:3: missing required field "prompt"`,
      `${f}:5: unknown field "answer"; allowed: id, prompt, reference, category, metadata`,
      `${f}:5: unknown field "difficulty"; allowed: id, prompt, reference, category, metadata`,
      `${f}:6: expected a task object with "id" and "prompt", got a list`,
      `${f}:7: "id" must not be empty`,
      `${f}:7: "prompt" must not be empty`,
      `${f}:8: "reference" must be a string or a number`,
      `${f}:8: "category" must be a string`,
      `${f}:8: "metadata" must be an object (a mapping)`,
      `${f}:9: "id" must be a string`,
      `${f}:10: duplicate id "ok-1" (first defined at ${f}:1)`,
    ]);
  });

  it('reports each YAML problem at its node', () => {
    const f = shown('bad.yaml');
    expect(loadIssues([{ file: 'bad.yaml' }])).toEqual([
      `${f}:4: missing required field "id"`,
      `${f}:8: unknown field "answer"; allowed: id, prompt, reference, category, metadata`,
      `${f}:9: "metadata" must be an object (a mapping)`,
      `${f}:10: expected a task object with "id" and "prompt", got a string`,
      `${f}:11: duplicate id "y-1" (first defined at ${f}:2)`,
    ]);
  });

  it('reports YAML syntax errors and wrong shapes', () => {
    expect(read('syntax.yaml').issues).toEqual([
      'syntax.yaml:5: invalid YAML: Map keys must be unique',
      'syntax.yaml:7: invalid YAML: Nested mappings are not allowed in compact mappings',
    ]);
    const shape = 'expected a list of tasks, or a mapping with one key "tasks" holding that list';
    expect(read('top-level.yaml').issues).toEqual([
      `top-level.yaml:3: unknown top-level key "extra"; ${shape}`,
      `top-level.yaml:4: unknown top-level key "version"; ${shape}`,
    ]);
    expect(read('scalar.yaml').issues).toEqual([`scalar.yaml:1: ${shape}`]);
  });

  it('refuses empty files, unknown file types and missing files', () => {
    expect(read('empty.jsonl').issues).toEqual(['empty.jsonl:1: empty task file: expected one JSON object per line']);
    expect(read('empty.yaml').issues).toEqual([
      'empty.yaml:1: empty task file: expected a list of tasks, or a mapping with one key "tasks" holding that list',
    ]);
    expect(read('empty-list.yaml').issues).toEqual(['empty-list.yaml:1: empty task file: "tasks" has no tasks']);
    expect(read('tasks.csv').issues).toEqual([
      'tasks.csv: unsupported task file type ".csv"; use .jsonl, .ndjson, .yaml, .yml, .json',
    ]);
    expect(read('nope.jsonl').issues).toEqual(['nope.jsonl: cannot read task file (ENOENT)']);
  });

  it('reports duplicate ids across files and suites with both places', () => {
    const good = shown('good.jsonl');
    const collide = shown('collide.jsonl');
    expect(
      loadIssues([
        { suite: 'arithmetic', n: 5, seed: 1, difficulty: 2 },
        { file: 'good.jsonl' },
        { file: 'collide.jsonl' },
      ]),
    ).toEqual([
      `${collide}:1: duplicate id "suite:arithmetic:1:0" (first defined at tasks.sources[0] (suite arithmetic, difficulty 2, seed 1))`,
      `${collide}:2: duplicate id "geo-1" (first defined at ${good}:2)`,
    ]);
    expect(
      loadIssues([
        { suite: 'multi_step', n: 5, seed: 3 },
        { suite: 'multi_step', n: 8, seed: 3 },
      ]),
    ).toEqual([
      'tasks.sources[1] (suite multi_step, seed 3): 5 duplicate ids ("suite:multi_step@0:3:0", "suite:multi_step@0:3:1", "suite:multi_step@0:3:2", …) (first defined at tasks.sources[0] (suite multi_step, seed 3))',
    ]);
  });

  it('collects the problems of all sources into one user error', () => {
    let error: unknown;
    try {
      loadTasks(
        config([{ file: 'empty.jsonl' }, { file: 'good.yaml' }, { file: 'scalar.yaml' }, { file: 'missing.yaml' }]),
        DIR,
      );
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UserError);
    expect((error as UserError).exitCode).toBe(2);
    expect((error as Error).message).toBe(
      [
        'invalid tasks (3 problems):',
        `  ${shown('empty.jsonl')}:1: empty task file: expected one JSON object per line`,
        `  ${shown('scalar.yaml')}:1: expected a list of tasks, or a mapping with one key "tasks" holding that list`,
        `  ${shown('missing.yaml')}: cannot read task file (ENOENT)`,
      ].join('\n'),
    );
  });
});
