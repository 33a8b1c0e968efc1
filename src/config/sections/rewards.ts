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

/** The families that compare an answer with the task's reference, and give nothing without one. */
export const ANSWER_REFERENCE_FAMILIES = ['exact', 'numeric', 'f1', 'rouge_l', 'regex', 'contains'] as const;

/**
 * Every family that reads the task's reference: the answer families, and coordination (its quality term) and voting
 * (a vote for the reference-best answer), which score their other terms without one.
 */
export const READS_REFERENCE: ReadonlySet<string> = new Set([...ANSWER_REFERENCE_FAMILIES, 'coordination', 'voting']);

/** The families whose verdict (1 right, 0 wrong) says an answer matches the task's reference. */
export const REFERENCE_VERIFYING: readonly string[] = ['exact', 'numeric'];
/** The families whose verdict stands for "this answer is right" without a reference. */
const LABEL_FREE_VERIFYING: readonly string[] = ['agreement'];

export const rewardsSchema = z.strictObject({
  references: z
    .enum(['on', 'off'])
    .default('on')
    .describe(
      "off: the loop learns without the tasks' reference answers (as on traffic that has none): no reward reads "
        + 'them, and an answer counts as right when it agrees with the majority (the agreement family) instead of '
        + 'matching the reference; evaluation checks candidates against the references it withheld',
    ),
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
      compare: z
        .enum(['answer_line', 'last_number'])
        .default('answer_line')
        .describe(
          'what two answers agree on: answer_line, their normalized answer lines (a lone number by its value); '
            + "last_number, the last number of the answer line (a free-form reply's), else the line as answer_line",
        ),
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

/**
 * The families whose verdict says an answer is right (value 1) or wrong (0): what verified SFT rows, correctness
 * pairs, headroom and success read. The reference's exact and numeric match; with rewards.references off,
 * agreement with the majority.
 */
export function verifyingFamilies(rewards: Pick<RewardsConfig, 'references'>): readonly string[] {
  return rewards.references === 'off' ? LABEL_FREE_VERIFYING : REFERENCE_VERIFYING;
}

/** rewards.references off: something must say an answer is right, and nothing weighted may need the reference. */
export function referenceIssues(rewards: RewardsConfig): RuleIssue[] {
  if (rewards.references !== 'off') return [];
  const issues: RuleIssue[] = [];
  if (!rewards.weights.agreement)
    issues.push({
      path: ['rewards', 'weights', 'agreement'],
      message:
        'rewards.references is off, so agreement with the majority is what says an answer is right: give it a weight',
    });
  for (const family of ANSWER_REFERENCE_FAMILIES)
    if (rewards.weights[family])
      issues.push({
        path: ['rewards', 'weights', family],
        message: `${family} compares answers with the reference, which rewards.references: off withholds; set it to 0`,
      });
  return issues;
}

/** A custom reward with a weight needs its command. */
export function customRewardIssues(rewards: RewardsConfig): RuleIssue[] {
  return (rewards.weights.custom ?? 0) !== 0 && !rewards.custom
    ? [{ path: ['rewards', 'custom'], message: 'the custom reward has a weight, so set custom.command' }]
    : [];
}
