import { z } from 'zod';
import { amount, name, nonNegInt, retries, timeoutMs } from '../fields.js';
import type { RuleIssue } from '../rule-issue.js';

export const REWARD_FAMILIES = [
  'exact',
  'numeric',
  'f1',
  'rouge_l',
  'regex',
  'contains',
  'judge',
  'coordination',
  'voting',
  'tool',
  'peer_vote',
  'agreement',
  'custom',
  'human',
] as const;

export const rewardsSchema = z.strictObject({
  weights: z.partialRecord(z.enum(REWARD_FAMILIES), amount).default({ exact: 1, numeric: 1, coordination: 0.2 }),
  numeric_tolerance: z.number().nonnegative().max(1e6).default(1e-6),
  judge: z
    .strictObject({
      model: name.optional(),
      rubric: z
        .array(z.strictObject({ criterion: z.string().min(1), weight: z.number().positive().max(1e6) }))
        .max(100)
        .default([]),
      max_retries: retries.default(2),
      failure_score: amount.default(0),
    })
    .prefault({}),
  coordination: z
    .strictObject({
      free_rounds: nonNegInt.max(1000).default(3),
      round_penalty: amount.default(-0.1),
      quality_coef: amount.default(2.0),
      token_coef: amount.default(-0.001),
      consensus_bonus: amount.default(1.0),
      no_consensus_penalty: amount.default(-0.5),
    })
    .prefault({}),
  voting: z.strictObject({ correct: amount.default(1.0), incorrect: amount.default(-0.5) }).prefault({}),
  tool: z.strictObject({ success: amount.default(1), failure: amount.default(-1) }).prefault({}),
  agreement: z
    .strictObject({
      min_share: z
        .number()
        .gt(0)
        .max(1)
        .default(0.5)
        .describe("the majority's share of the rollout's answers below which a rollout gives no agreement signal"),
      min_answers: z.int().min(2).max(1000).default(3).describe('fewer answers than this give no agreement signal'),
    })
    .prefault({}),
  custom: z
    .strictObject({ command: z.array(z.string().min(1)).min(1), timeout_ms: timeoutMs().default(10_000) })
    .optional(),
});

export type RewardsConfig = z.output<typeof rewardsSchema>;

/** A judge reward with a weight needs a model that judges and a rubric. */
export function judgeIssues(rewards: RewardsConfig): RuleIssue[] {
  const issues: RuleIssue[] = [];
  if ((rewards.weights.judge ?? 0) === 0) return issues;
  if (!rewards.judge.model)
    issues.push({
      path: ['rewards', 'judge', 'model'],
      message: 'the judge reward has a weight, so name the model that judges',
    });
  if (!rewards.judge.rubric.length)
    issues.push({
      path: ['rewards', 'judge', 'rubric'],
      message: 'the judge reward has a weight, so give at least one rubric criterion',
    });
  return issues;
}

/** A custom reward with a weight needs its command. */
export function customRewardIssues(rewards: RewardsConfig): RuleIssue[] {
  return (rewards.weights.custom ?? 0) !== 0 && !rewards.custom
    ? [{ path: ['rewards', 'custom'], message: 'the custom reward has a weight, so set custom.command' }]
    : [];
}
