import { z } from 'zod';
import { amount, count } from '../fields.js';
import { rolloutProblem } from '../rollout-stages.js';

export const deploySchema = z.strictObject({
  auto: z
    .boolean()
    .default(true)
    .describe('loop: promote a candidate whose gates pass (false: evaluate and report only)'),
  keep_history: count(10_000).default(20),
  rollback_on_regression: z
    .boolean()
    .default(true)
    .describe('watch production after a deploy and roll back on a significant drop'),
  role_gates: z
    .boolean()
    .default(true)
    .describe(
      "with roles: the gates apply to each changed role's own effect too (its "
        + 'leave-one-in set against production), and only the roles that pass are '
        + "promoted; false: the team's candidate is promoted whole when its gates pass",
    ),
  gates: z
    .strictObject({
      min_pairs: count(1_000_000)
        .default(10)
        .describe('task×seed pairs the evaluation must have: a handful of pairs says little, however the numbers fall'),
      min_improvement: amount
        .default(0)
        .describe("the candidate's mean improvement on eval.metric must be at least this"),
      ci_lower_above_zero: z
        .boolean()
        .default(true)
        .describe('the lower bound of the paired-bootstrap CI of the improvement must be above 0'),
      max_category_regression: amount
        .nonnegative()
        .default(0.1)
        .describe('no task category may lose more than this on eval.metric'),
      category_significance: z
        .boolean()
        .default(true)
        .describe(
          'a category fails max_category_regression only when a one-sided exact sign test (McNemar on success) '
            + 'finds the loss at category_alpha, Holm-corrected over the categories tested (false: any mean loss '
            + 'beyond the tolerance fails, however few its tasks)',
        ),
      category_min_pairs: count(1_000_000)
        .default(8)
        .describe(
          'categories (and curriculum levels) with fewer pairs are shown but cannot refuse: no exact test on a '
            + 'handful of pairs can reach significance after the correction, and each one tested widens it',
        ),
      category_alpha: z
        .number()
        .gt(0)
        .lt(1)
        .default(0.05)
        .describe('family-wise rate at which an unchanged candidate is refused by the category and forgetting gates'),
      max_cost_increase: z
        .number()
        .min(0)
        .max(1000)
        .nullable()
        .default(0.5)
        .describe('tokens per task may grow by at most this share (null: no ceiling)'),
      reference_alpha: z
        .number()
        .gt(0)
        .lt(1)
        .default(0.05)
        .describe(
          'rewards.references off: the candidate is refused when a one-sided exact McNemar test finds it worse '
            + 'than the baseline on the references the loop withheld (reference_check), at this rate',
        ),
    })
    .prefault({}),
  canary: z
    .strictObject({
      fraction: z
        .number()
        .min(0)
        .max(1)
        .default(0)
        .describe('loop: deploy through a canary serving this share of collects first (0: no canary)'),
      min_rollouts: count(1_000_000).default(20).describe('canary rollouts needed before its gates decide promotion'),
    })
    .prefault({}),
  rollout: z
    .array(z.number().gt(0).max(1))
    .min(1)
    .max(20)
    .optional()
    .superRefine((stages, ctx) => {
      const problem = stages && rolloutProblem(stages);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .describe(
      "a canary's shares of traffic by stage, e.g. [0.1, 0.5, 1.0]: it starts at the first, review "
        + 'advances it when its gates pass at a stage (1.0: passing promotes) and rolls it back on a '
        + 'significant drop (deploy.watch.max_drop, alpha); unset: a canary stays at its fraction',
    ),
  watch: z
    .strictObject({
      min_rollouts: count(1_000_000).default(10).describe('production rollouts after a deploy before it is judged'),
      max_drop: amount
        .nonnegative()
        .default(0.05)
        .describe('a drop of mean reward beyond this, significant at alpha, rolls back'),
      alpha: z.number().gt(0).lt(1).default(0.05),
    })
    .prefault({}),
  export_massgen: z
    .string()
    .min(1)
    .optional()
    .describe(
      'write production as a MassGen config (YAML) to this file, relative '
        + 'to the config file, after each deploy, canary promotion and rollback',
    ),
});
