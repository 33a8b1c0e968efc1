/** The embedded offline defaults: a local SmolLM2 team on built-in tasks. */
export const DEFAULT_MODEL_NAME = 'smollm2-135m-instruct';
export const DEFAULT_MODEL_REF = `builtin:${DEFAULT_MODEL_NAME}`;
export const DEFAULT_CONFIG_FILE = 'massgen-rl.yaml';

export const DEFAULT_SYSTEM_PROMPT = [
  'You are a careful problem solver working in a team of agents.',
  'Solve the task step by step and state the final answer clearly on its own line.',
].join('\n');

export const defaultModels = {
  local: {
    model: DEFAULT_MODEL_NAME,
    local: { weights: DEFAULT_MODEL_REF },
  },
};

export const defaultPrompts = { solver: { text: DEFAULT_SYSTEM_PROMPT } };

/**
 * The default team, chosen by measurement with the bundled 135M model (docs/collect.md, "The default team"): three
 * agents answer independently (prompt_layout independent), the first greedily and the others sampling, so
 * the team's answer is the greedy one unless two samples agree on another; the protocol layout's markup
 * made the same team worse than one agent.
 */
export const DEFAULT_PROMPT_LAYOUT = 'independent' as const;

/**
 * The default team's training recipe on verifiable tasks, chosen by measurement (`npm run bench -- --only
 * efficacy` and `--only nights`, docs/benchmarks.md): DPO on correctness pairs (every verified-right answer of a task
 * against its verified-wrong ones). At one training budget it tied rejection-sampling SFT, but only its candidates
 * passed the deploy gates. Over many nights plain DPO won two cycles and then made production worse; three changes
 * each measured better on those later cycles: an SFT term on the chosen answers (DPO alone pushed their likelihood
 * down), rationalized pairs for the tasks no completion got right (the only pairs a task without headroom gives),
 * and a cap on one suite's share of the pairs (the suite with most to learn crowded out and undid the others). Four
 * completions per decision give it pairs to learn from; a LoRA adapter needs a learning rate far above full
 * fine-tuning's.
 */
export const DEFAULT_RECIPE = {
  algo: 'dpo',
  pairs: 'correctness',
  loss_type: ['sigmoid', 'sft'],
  rationalize: { samples: 4, max_tasks: 64 },
  max_suite_share: 0.35,
  learning_rate: 2e-4,
  num_train_epochs: 2,
  per_device_train_batch_size: 4,
  samples_per_turn: 4,
} as const;

/**
 * The default team's evaluation: after the first night a candidate gains a few points, which one seed over a hundred
 * tasks cannot tell from none; up to three looks (eval.sequential) find it at the same false-promotion rate.
 */
export const DEFAULT_MAX_LOOKS = 3;

export const defaultAgents = ['agent_a', 'agent_b', 'agent_c'].map((id, i) => ({
  id,
  model: 'local',
  system_prompt: 'solver',
  tool_mode: 'text' as const,
  implicit_answer: true,
  max_tokens: 128,
  ...(i === 0 ? { temperature: 0 } : {}),
}));

/**
 * rewards.weights when rewards.references is off and the config sets none: agreement with the majority says which
 * answers are right, and coordination's round, token and consensus terms stay (its quality term needs a reference).
 */
export const LABEL_FREE_WEIGHTS = { agreement: 1, coordination: 0.2 } as const;
