import { z } from 'zod';
import { amount, count, name } from '../fields.js';

export const ALGOS = ['grpo', 'sft', 'dpo', 'ppo'] as const;
export type Algo = (typeof ALGOS)[number];

const agentMatch = z
  .union([z.array(name).min(1), z.string().min(1)])
  .describe('agent ids, or a regular expression matched against the id');
/**
 * A train.<algo> section: the data selection declared here, and the trainer's settings (TRL's names:
 * num_train_epochs, per_device_train_batch_size, num_generations, beta, …) passed through as they are. The
 * trainer's dataclass declares and checks those (python/massgen_rl_training/<algo>.py, run as
 * massgen_rl_training.check by doctor and train).
 */
export function trainerSection<S extends z.core.$ZodLooseShape>(shape: S) {
  const section = z.looseObject(shape);
  return section.prefault({} as z.input<typeof section>);
}

/** Rationalization (STaR): the model asked again, the reference as a hint, for the train tasks it never solved. */
const rationalize = z
  .strictObject({
    enabled: z.boolean().default(true),
    samples: count(64).default(4).describe('replies asked for per task'),
    max_tasks: count(100_000).default(64).describe('tasks asked about per dataset build at most'),
  })
  .optional();

/** The data selection of each train.<algo> section: what the dataset of a run takes from the traces. */
export const selection = {
  sft: {
    reward_threshold: amount
      .nullable()
      .default(0.5)
      .describe('minimum reward of a turn (or its rollout) to learn from; null keeps all'),
    agents: agentMatch.optional(),
    include_presentation: z.boolean().default(true),
    select: z
      .enum(['reward', 'verified'])
      .default('reward')
      .describe(
        'reward: answers and presentations whose reward reaches reward_threshold; '
          + 'verified: rejection-sampling fine-tuning, only completions (answers and '
          + 'collect.samples_per_turn samples) that an exact or numeric reward verified right',
      ),
    max_per_task: count(10_000)
      .default(4)
      .describe('select verified: rows per task at most, so tasks the model already solves do not crowd out the rest'),
    rationalize: rationalize.describe(
      'select verified (STaR): for each train task with a reference that '
        + 'no completion got right, ask the model again with the reference as '
        + 'a hint and add the replies that reach it (without the hint) as rows',
    ),
    teacher: z
      .strictObject({
        model: z.string().min(1).describe('the config model (a key of models) that teaches'),
        samples: count(64).default(1).describe('replies asked for per task'),
        max_tasks: count(100_000).default(64).describe('tasks asked about per dataset build at most'),
      })
      .optional()
      .describe(
        'select verified: for each train task with a reference that no completion got '
          + 'right, ask this model (no hint) and add its verified-right replies as rows',
      ),
  },
  grpo: {
    agents: agentMatch.optional(),
    min_group_size: z.int().min(2).max(1024).default(2),
    on_policy: z
      .boolean()
      .default(true)
      .describe(
        'offline mode: learn only from completions served by the weights training '
          + 'starts from (the rollout resource set records them); false also replays '
          + "other weights' completions as if the policy had sampled them",
      ),
  },
  dpo: {
    min_margin: z.number().nonnegative().max(1e6).default(0),
    system_prompt: z.string().min(1).optional(),
    max_pairs_per_task: count(100_000).default(16),
    max_suite_share: z
      .number()
      .gt(0)
      .max(1)
      .default(1)
      .describe(
        "no suite (a task category's first segment) above this share of the night's pairs, at least an even share "
          + "each; a suite over it keeps its tasks' first pairs (1: no limit)",
      ),
    pairs: z
      .enum(['winner', 'correctness'])
      .default('winner')
      .describe(
        "winner: the winner's answer against the others of its rollout, and better final answers "
          + 'of a task against worse (by reward); correctness: every verified-correct answer of a '
          + 'task (exact or numeric reward 1) against its verified-wrong ones, whoever won',
      ),
    rationalize: rationalize.describe(
      'pairs correctness: for each train task with a reference that no answer got right, ask the model again '
        + 'with the reference as a hint; each reply that reaches it (without mentioning the hint) is a chosen '
        + "answer against the task's wrong ones, under the prompt without the hint",
    ),
  },
  ppo: {
    credit: z.enum(['final', 'discounted']).default('final'),
    gamma: z.number().gt(0).max(1).default(0.9),
    agents: agentMatch.optional(),
  },
} satisfies Record<Algo, z.core.$ZodLooseShape>;

/** The keys of train.<algo> that select data; the others are the trainer's settings. */
export const SELECTION_KEYS = Object.fromEntries(ALGOS.map((a) => [a, Object.keys(selection[a])])) as Record<
  Algo,
  string[]
>;
