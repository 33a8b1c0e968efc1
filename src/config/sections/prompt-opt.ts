import { z } from 'zod';
import { count, MAX_CONCURRENCY, MAX_TASKS, name, nonNegInt, seed, WEEK_S } from '../fields.js';

export const promptOptSchema = z.strictObject({
  prompts: z
    .array(name)
    .min(1)
    .optional()
    .describe(
      'prompts (keys under prompts) optimized together (default: every '
        + "agent's system prompt, and orchestrator.presenter_prompt when set)",
    ),
  optimizer_model: name
    .optional()
    .describe(
      'the model (models.*) that reads traces and proposes edits (default: the first '
        + "agent's model; a 135M model is a weak optimizer, a stronger endpoint helps)",
    ),
  rounds: count(1000).default(4).describe('proposals (reflective mutations or merges) tried'),
  edit: z
    .enum(['auto', 'rewrite', 'advice'])
    .default('auto')
    .describe(
      'rewrite: the optimizer rewrites the whole prompt from the traces; advice: '
        + 'it writes one sentence of advice, added to the prompt (for small optimizer '
        + 'models); auto: advice when the optimizer is the bundled model, else rewrite',
    ),
  val_n: count(MAX_TASKS)
    .default(8)
    .describe('train-split tasks every accepted candidate is scored on (the Pareto front is over them)'),
  minibatch: count(1000)
    .default(3)
    .describe(
      'train-split tasks (outside the validation batch when there '
        + 'are enough) a proposal is read from and first tried on',
    ),
  seeds: count(100).default(1).describe('sampling seeds per task: every candidate runs on the same tasks and seeds'),
  examples: count(20).default(2).describe('low- and high-reward rollouts the optimizer reads per proposal (each)'),
  merge_every: nonNegInt
    .max(1000)
    .default(3)
    .describe(
      'every Nth proposal is a merge of two front candidates into a team not '
        + 'tried yet (a reflective mutation when no pair gives one; 0: never merge)',
    ),
  max_prompt_chars: count(100_000).default(2000).describe('a proposed prompt longer than this is refused'),
  temperature: z.number().min(0).max(2).default(0.7).describe("the optimizer model's sampling temperature"),
  max_tokens: count(100_000).default(512).describe("the optimizer's completion tokens per proposal"),
  seed: seed.default(7),
  concurrency: count(MAX_CONCURRENCY).optional().describe('orchestrations at a time (default collect.concurrency)'),
  budget: z
    .strictObject({
      rollouts: count(1_000_000).default(60).describe('orchestrations run (cached results are free); never exceeded'),
      optimizer_tokens: count(100_000_000)
        .default(50_000)
        .describe('prompt + completion tokens of the optimizer model; a call is made only when its worst case fits'),
      wall_min: count(WEEK_S / 60)
        .default(60)
        .describe('minutes; running orchestrations are cancelled at the limit'),
    })
    .prefault({}),
});
