import { z } from 'zod';
import { count, MAX_CONCURRENCY, MAX_TASKS } from '../fields.js';

export const collectSchema = z.strictObject({
  concurrency: count(MAX_CONCURRENCY).default(2),
  samples_per_turn: count(64).default(1),
  n: count(MAX_TASKS).optional().describe('tasks per collect run (default: all train-split tasks)'),
  split: z.enum(['train', 'eval', 'all']).default('train'),
  source: z
    .enum(['orchestrate', 'gateway'])
    .default('orchestrate')
    .describe(
      'orchestrate: collect runs tasks through the agent team; gateway: it runs nothing and takes the '
        + 'gateway sessions finished since the last such collect (less the gateway.holdout share; sessions '
        + 'without a reward wait for feedback or the judge) as the training data (docs/collect.md)',
    ),
});
