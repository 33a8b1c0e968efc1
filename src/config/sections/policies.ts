import { z } from 'zod';
import { count, name } from '../fields.js';

/** The orchestration decisions a learned policy can take (`train policy KIND`). */
export const POLICY_KINDS = ['routing', 'stop', 'tool', 'delegate'] as const;
export const POLICY_ALGORITHMS = ['linucb', 'thompson', 'beta'] as const;

export const policiesSchema = z.strictObject({
  algorithm: z
    .enum(POLICY_ALGORITHMS)
    .default('linucb')
    .describe('linucb; thompson (linear-Gaussian); beta (Beta-Bernoulli, ignores the context)'),
  alpha: z.number().nonnegative().max(100).default(1).describe('LinUCB: width of the confidence bonus'),
  lambda: z.number().positive().max(1e6).default(1).describe('ridge prior of the linear models'),
  noise: z.number().positive().max(100).default(0.5).describe('thompson: scale of the posterior samples'),
  explore: z
    .number()
    .min(0)
    .max(1)
    .default(0.1)
    .describe(
      'ε floor while collecting: every arm keeps at least ε/K probability, so every decision has a known propensity',
    ),
  bootstrap: z
    .array(z.enum(POLICY_KINDS))
    .default([])
    .describe(
      'decisions collect explores uniformly while production has '
        + 'no policy for them (to gather the first training data)',
    ),
  cost_per_1k_tokens: z
    .number()
    .min(0)
    .max(1e6)
    .default(0.05)
    .describe("a policy's reward: quality (verified correctness, else the rollout reward) minus this × tokens / 1000"),
  routing: z
    .strictObject({
      arms: z
        .record(name, z.array(name).min(1))
        .optional()
        .describe('arm name → the agent ids that take part (default: each agent alone, and the whole team as "team")'),
    })
    .prefault({}),
  embedding_model: name
    .optional()
    .describe(
      'a model (models.*) with an OpenAI /v1/embeddings endpoint: its '
        + 'embedding of the task joins the routing, tool and delegate features',
    ),
  min_decisions: count(1_000_000)
    .default(20)
    .describe('train policy refuses to fit a policy on fewer logged decisions'),
});

export type PolicyKind = (typeof POLICY_KINDS)[number];
export type PolicyAlgorithm = (typeof POLICY_ALGORITHMS)[number];
export type PoliciesConfig = z.output<typeof policiesSchema>;
