import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { spread } from '../../src/tasks/curriculum-draw.js';
import { currentLevel, decideLevel, type CurriculumConfig } from '../../src/tasks/curriculum.js';
import { tasksForRun } from '../../src/tasks/for-run.js';
import { suiteLevelOf } from '../../src/tasks/suites/define.js';
import { configIssues, tempDir } from '../helpers.js';

const cfg = (over: Partial<CurriculumConfig> = {}): CurriculumConfig => ({
  ...configSchema.parse({}).tasks.curriculum,
  enabled: true,
  ...over,
});

const tasksConfig = (curriculum: Partial<CurriculumConfig>, sources: unknown[] = [{ suite: 'arithmetic', n: 200 }]) =>
  configSchema.parse({ tasks: { sources, curriculum: { enabled: true, ...curriculum } } }).tasks;

const levelsOf = (ids: string[]) => ids.map((id) => suiteLevelOf(id)!.level);

describe('curriculum levels', () => {
  it('is off by default, with the documented defaults', () => {
    expect(configSchema.parse({}).tasks.curriculum).toEqual({
      enabled: false,
      threshold: 0.7,
      min_tasks: 20,
      replay: 0.2,
      start_level: 0,
      max_level: 3,
    });
  });

  it('reads a suite and level from a task id, level 2 without @', () => {
    expect(suiteLevelOf('suite:unit_conversion@1:7:3')).toEqual({ suite: 'unit_conversion', level: 1 });
    expect(suiteLevelOf('suite:arithmetic:1:0')).toEqual({ suite: 'arithmetic', level: 2 });
    expect(suiteLevelOf('my-task-1')).toBeNull();
  });

  it('advances at the threshold with min_tasks results, one level at a time', () => {
    const d = decideLevel({ suite: 'arithmetic', level: 0, trials: 20, successes: 14 }, cfg());
    expect(d).toMatchObject({ advance: true, level: 1 });
    expect(d.reason).toContain('14/20 correct (70 %) at level 0 ≥ threshold 70 %');
    expect(decideLevel({ suite: 'arithmetic', level: 0, trials: 20, successes: 13 }, cfg()).advance).toBe(false);
  });

  it('does not advance below min_tasks, however well production does', () => {
    const d = decideLevel({ suite: 'arithmetic', level: 1, trials: 19, successes: 19 }, cfg());
    expect(d).toMatchObject({ advance: false, level: 1 });
    expect(d.reason).toContain('fewer than min_tasks (20)');
  });

  it('never goes past max_level', () => {
    const d = decideLevel({ suite: 'arithmetic', level: 2, trials: 50, successes: 50 }, cfg({ max_level: 2 }));
    expect(d).toMatchObject({ advance: false, level: 2 });
    expect(currentLevel(3, cfg({ max_level: 2 }))).toBe(2);
    expect(currentLevel(undefined, cfg({ start_level: 1 }))).toBe(1);
    expect(currentLevel(0, cfg({ start_level: 1 }))).toBe(1);
  });

  it('names the field of a bad setting', () => {
    expect(configIssues('tasks:\n  curriculum: { replay: 1 }\n').join('\n')).toMatch(/tasks\.curriculum\.replay/);
    expect(configIssues('tasks:\n  curriculum: { start_level: 3, max_level: 1 }\n').join('\n')).toMatch(
      /tasks\.curriculum\.start_level.*max_level/,
    );
    expect(
      configIssues('tasks:\n  curriculum: { enabled: true }\n  sources: [{ suite: arithmetic, difficulty: 1 }]\n').join(
        '\n',
      ),
    ).toMatch(/tasks\.sources\[0\]\.difficulty: tasks\.curriculum sets each suite's level/);
    const onlyFiles = configIssues('tasks:\n  curriculum: { enabled: true }\n  sources: [{ file: t.jsonl }]\n');
    expect(onlyFiles.join('\n')).toMatch(
      /tasks\.curriculum\.enabled: the curriculum moves built-in suites through levels: tasks\.sources has none/,
    );
  });
});

describe('curriculum draw', () => {
  const dir = tempDir({});

  it('draws the current level with the replay share from the levels below, the same each time', () => {
    const config = tasksConfig({ replay: 0.25 });
    const draw = () =>
      tasksForRun(config, dir, { split: 'train', curriculum: { levels: { arithmetic: 2 }, purpose: 'collect' } });
    const tasks = draw();
    const levels = levelsOf(tasks.map((t) => t.id));
    const current = levels.filter((l) => l === 2).length;
    const replay = levels.filter((l) => l < 2).length;
    expect(levels.every((l) => l <= 2)).toBe(true);
    expect(replay / tasks.length).toBeCloseTo(0.25, 2);
    expect(current).toBeGreaterThan(100);
    expect(new Set(levels.filter((l) => l < 2))).toEqual(new Set([0, 1]));
    expect(tasks.every((t) => t.split === 'train')).toBe(true);
    expect(draw().map((t) => t.id)).toEqual(tasks.map((t) => t.id));
    // The first n keep about the share: the replay is spread through the draw.
    const first = levelsOf(
      tasksForRun(config, dir, {
        split: 'train',
        n: 40,
        curriculum: { levels: { arithmetic: 2 }, purpose: 'collect' },
      }).map((t) => t.id),
    );
    expect(first).toHaveLength(40);
    expect(first.filter((l) => l < 2).length).toBeGreaterThanOrEqual(9);
    expect(first.filter((l) => l < 2).length).toBeLessThanOrEqual(10);
  });

  it('draws no replay at the first level, and only the start level without a stored one', () => {
    const config = tasksConfig({ start_level: 1 });
    const tasks = tasksForRun(config, dir, { split: 'train', curriculum: { levels: {}, purpose: 'collect' } });
    expect(new Set(levelsOf(tasks.map((t) => t.id)))).toEqual(new Set([1, 0]));
    const first = tasksForRun(tasksConfig({}), dir, {
      split: 'train',
      curriculum: { levels: { arithmetic: 0 }, purpose: 'collect' },
    });
    expect(new Set(levelsOf(first.map((t) => t.id)))).toEqual(new Set([0]));
  });

  it('evaluates every level up to the current one, the levels taking turns', () => {
    const tasks = tasksForRun(tasksConfig({}), dir, {
      split: 'eval',
      n: 9,
      curriculum: { levels: { arithmetic: 2 }, purpose: 'eval' },
    });
    expect(levelsOf(tasks.map((t) => t.id))).toEqual([0, 1, 2, 0, 1, 2, 0, 1, 2]);
    expect(tasks.every((t) => t.split === 'eval')).toBe(true);
  });

  it('leaves the draw as it was when the curriculum is off', () => {
    const off = configSchema.parse({ tasks: { sources: [{ suite: 'arithmetic', n: 60 }] } }).tasks;
    const plain = tasksForRun(off, dir, { split: 'train' });
    const withLevels = tasksForRun(off, dir, {
      split: 'train',
      curriculum: { levels: { arithmetic: 3 }, purpose: 'collect' },
    });
    expect(withLevels).toEqual(plain);
  });

  it('spreads the extra items evenly', () => {
    expect(spread([1, 1, 1, 1, 1, 1], [0, 0])).toEqual([1, 1, 1, 0, 1, 1, 1, 0]);
  });
});
