import { z } from 'zod';
import { count, filePath, MAX_TASKS, seed } from '../fields.js';
import { fileIssues, type RuleIssue } from '../rule-issue.js';

export const BUILTIN_SUITES = ['arithmetic', 'unit_conversion', 'string_transform', 'multi_step'] as const;
/**
 * A built-in suite's difficulty levels: 0 the easiest (the default), 1 easier than the original tasks, 2 the original
 * tasks, 3 harder.
 */
export const DIFFICULTIES = [0, 1, 2, 3] as const;

const taskSource = z.union([
  z.strictObject({
    suite: z.enum(BUILTIN_SUITES),
    n: count(MAX_TASKS).default(50),
    seed: seed.default(1),
    difficulty: z
      .literal(DIFFICULTIES, { error: 'must be 0, 1, 2 or 3' })
      .optional()
      .describe(
        "0: the easiest, within the bundled model's reach (the default), 1: easier than the original "
          + "tasks, 2: the original tasks, 3: harder (`massgen-rl tasks` lists each suite's levels)",
      ),
  }),
  z.strictObject({ file: filePath() }),
]);

/** tasks.max_prompt_chars unless the config says otherwise: a long document fits, a runaway file does not. */
export const DEFAULT_MAX_PROMPT_CHARS = 100_000;

const curriculum = z
  .strictObject({
    enabled: z
      .boolean()
      .default(false)
      .describe('off: every collect and evaluation draws tasks.sources as they are (each suite at its difficulty)'),
    threshold: z
      .number()
      .gt(0)
      .max(1)
      .default(0.7)
      .describe("production's success at a suite's level from which its next collect draws from the next level"),
    min_tasks: count(MAX_TASKS)
      .default(20)
      .describe("production's scored collect results a suite needs at its level before it may advance"),
    replay: z
      .number()
      .min(0)
      .lt(1, 'must be below 1 (a collect draws most of its tasks from the current level)')
      .default(0.2)
      .describe("share of a collect's tasks drawn from the levels below a suite's current one"),
    start_level: z
      .literal(DIFFICULTIES, { error: 'must be 0, 1, 2 or 3' })
      .default(0)
      .describe('the level every suite starts at (a suite never sits below it)'),
    max_level: z
      .literal(DIFFICULTIES, { error: 'must be 0, 1, 2 or 3' })
      .default(3)
      .describe('the highest level a suite moves up to'),
  })
  .refine((c) => c.start_level <= c.max_level, {
    message: 'must not be above max_level',
    path: ['start_level'],
  })
  .describe(
    'built-in suites move up a difficulty level when production succeeds on '
      + 'theirs; evaluation covers the levels below (docs/running-the-loop.md)',
  );

export const tasksSchema = z.strictObject({
  curriculum: curriculum.prefault({}),
  sources: z
    .array(taskSource)
    .min(1)
    .prefault([{ suite: 'arithmetic' }]),
  max_prompt_chars: count(10_000_000)
    .default(DEFAULT_MAX_PROMPT_CHARS)
    .describe(
      'a task whose prompt is longer (in characters) is refused with its file and line; a line or string of a '
        + 'task file too long to hold a task under this limit is refused as it is read, before the rest of the file',
    ),
  split: z
    .strictObject({
      eval_fraction: z.number().min(0).max(1).default(0.2),
      salt: z.string().default('massgen-rl'),
      holdout_templates: z
        .number()
        .min(0)
        .lt(1, 'must be below 1 (every kind keeps a template for train)')
        .default(0.25)
        .describe(
          'built-in suites: per suite and kind, about this fraction of the prompt '
            + 'templates is eval-only (every task using one is in the eval split; a kind keeps '
            + 'at least one train template; 0: none); the other tasks split by eval_fraction',
        ),
    })
    .prefault({}),
});

export type TasksConfig = z.output<typeof tasksSchema>;

/** Task files exist, and a curriculum has built-in suites to move and sets their levels itself. */
export function taskIssues(tasks: TasksConfig, baseDir: string): RuleIssue[] {
  const issues: RuleIssue[] = [];
  tasks.sources.forEach((s, i) => {
    if ('file' in s) issues.push(...fileIssues(baseDir, s.file, ['tasks', 'sources', i, 'file']));
    else if (tasks.curriculum.enabled && s.difficulty !== undefined)
      issues.push({
        path: ['tasks', 'sources', i, 'difficulty'],
        message: "tasks.curriculum sets each suite's level (start_level to max_level): leave difficulty out",
      });
  });
  if (tasks.curriculum.enabled && !tasks.sources.some((s) => 'suite' in s))
    issues.push({
      path: ['tasks', 'curriculum', 'enabled'],
      message: 'the curriculum moves built-in suites through levels: tasks.sources has none',
    });
  return issues;
}
