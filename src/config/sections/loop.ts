import { z } from 'zod';
import { count, MAX_TASKS, nonNegInt, WEEK_S } from '../fields.js';
import type { RuleIssue } from '../rule-issue.js';

export const LOOP_STEPS = ['collect', 'review', 'train', 'prompt_opt', 'eval', 'deploy'] as const;
/** The loop's stages unless loop.steps says otherwise (prompt optimization, `prompt_opt`, runs only when listed). */
export const DEFAULT_LOOP_STEPS = ['collect', 'review', 'train', 'eval', 'deploy'] as const;

export const loopSchema = z.strictObject({
  schedule: z.string().default('0 2 * * *').describe('cron expression (5 or 6 fields)'),
  steps: z
    .array(z.enum(LOOP_STEPS))
    .min(1)
    .default([...DEFAULT_LOOP_STEPS])
    .describe(
      'stages of a cycle, run in the order collect, review, train, prompt_opt, eval, '
        + 'deploy (review: a canary or a deploy judged on the rollouts since; prompt_opt: '
        + 'prompt optimization (train prompts); eval takes the newest candidate)',
    ),
  max_runtime_min: count(WEEK_S / 60)
    .default(360)
    .describe('a cycle stops (resumable) after this many minutes'),
  stage_timeout_min: z
    .partialRecord(z.enum(LOOP_STEPS), count(WEEK_S / 60))
    .default({})
    .describe('per stage limits in minutes'),
  collect_n: count(MAX_TASKS).optional().describe('tasks per cycle collect (default collect.n)'),
  min_new_traces: nonNegInt
    .max(MAX_TASKS)
    .default(1)
    .describe('train only when at least this many rollouts completed since the last training run'),
  stale_lock_min: count(WEEK_S / 60)
    .default(30)
    .describe('a lock held by another machine with no heartbeat for this long is taken over'),
});

export type LoopConfig = z.output<typeof loopSchema>;

/** loop.schedule is a cron expression. */
export function loopIssues(loop: LoopConfig): RuleIssue[] {
  const problem = cronProblem(loop.schedule);
  return problem ? [{ path: ['loop', 'schedule'], message: problem }] : [];
}

const CRON_FIELD = /^(\*|\d+(-\d+)?)(\/\d+)?(,(\*|\d+(-\d+)?)(\/\d+)?)*$|^[A-Za-z]{3}(-[A-Za-z]{3})?(,[A-Za-z]{3})*$/;

function cronProblem(expr: string): string | undefined {
  const fields = expr.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) return `cron expression needs 5 or 6 fields, got ${fields.length}`;
  const bad = fields.find((f) => !CRON_FIELD.test(f));
  return bad ? `"${bad}" is not a valid cron field` : undefined;
}
