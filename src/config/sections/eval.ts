import { z } from 'zod';
import { count, MAX_CONCURRENCY, MAX_TASKS, name, seed } from '../fields.js';

export const evalSchema = z.strictObject({
  split: z.enum(['train', 'eval', 'all']).default('eval'),
  n: count(MAX_TASKS).optional().describe('tasks per evaluation (default: every task of the split)'),
  tasks: z
    .string()
    .min(1)
    .optional()
    .describe('a built-in suite (or <suite>@<difficulty 0–3>) or a task file to evaluate on, instead of tasks.sources'),
  seeds: count(100)
    .default(1)
    .describe('sampling seeds per task: baseline and candidate run on the same tasks and seeds'),
  sequential: z
    .strictObject({
      max_looks: count(10)
        .default(1)
        .describe(
          'looks at most: a candidate that is promising (its mean clears deploy.gates.min_improvement) but not yet '
            + 'clear (ci_lower_above_zero fails) is measured on eval.seeds more seeds, up to this many times the '
            + 'first; each look is held to a stricter interval so that the looks together promote a candidate no '
            + 'better than the baseline no more often than one look at eval.bootstrap.confidence would. 1: one look',
        ),
      spending: z
        .enum(['obrien_fleming', 'pocock'])
        .default('obrien_fleming')
        .describe(
          "how the looks share the error: obrien_fleming keeps the first looks strict and the last near one look's "
            + 'interval; pocock holds every look to about the same, stricter, interval',
        ),
    })
    .prefault({}),
  concurrency: count(MAX_CONCURRENCY)
    .optional()
    .describe(
      "orchestrations at a time (default: enough to keep each model server's "
        + 'batch full, max_batch_size / agents, and at least collect.concurrency)',
    ),
  metric: z
    .enum(['mean_reward', 'success_rate'])
    .default('mean_reward')
    .describe('the primary metric: wins, gates and the headline difference'),
  bootstrap: z
    .strictObject({
      resamples: z.int().min(1000).max(1_000_000).default(10_000),
      confidence: z.number().gt(0.5).lt(1).default(0.95),
      seed: seed.default(1),
    })
    .prefault({}),
  report: z.boolean().default(true).describe('write the HTML report after each evaluation'),
  source: z
    .enum(['tasks', 'gateway'])
    .default('tasks')
    .describe(
      'what an evaluation runs: orchestrations of tasks, or a replay of the '
        + 'held-out captured gateway calls (gateway.holdout) against both sets',
    ),
  replay: z
    .strictObject({
      max_prompts: count(MAX_TASKS).default(100).describe('captured calls replayed, newest first'),
      judge_model: name
        .optional()
        .describe(
          'the config model that compares the two answers of a call without a reference (default rewards.judge.model)',
        ),
      temperature: z
        .number()
        .min(0)
        .max(2)
        .default(0)
        .describe("sampling temperature of both sides, instead of the captured call's"),
    })
    .prefault({}),
});
