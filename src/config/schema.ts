import { z } from 'zod';
import { defaultAgents, defaultModels, defaultPrompts, DEFAULT_MODEL_REF } from './defaults.js';

export const BUILTIN_SUITES = ['arithmetic', 'unit_conversion', 'string_transform', 'multi_step'] as const;
export const REWARD_FAMILIES = [
  'exact', 'numeric', 'f1', 'rouge_l', 'regex', 'contains',
  'judge', 'coordination', 'voting', 'tool', 'peer_vote', 'custom', 'human',
] as const;
export const ALGOS = ['grpo', 'sft', 'dpo', 'ppo'] as const;
export const LOOP_STEPS = ['collect', 'train', 'eval', 'deploy'] as const;

const name = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'use letters, digits, "_", "." or "-" (starting with a letter or digit)');
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name');
const posInt = z.int().positive();
const nonNegInt = z.int().nonnegative();

const localServer = z.strictObject({
  weights: z.string().min(1).describe('builtin:<name>, a weight resource "resource:<name>[@version]", or a path to an HF folder'),
  host: z.string().default('127.0.0.1'),
  port: nonNegInt.max(65535).default(0).describe('0 picks a free port'),
  device: z.enum(['auto', 'cpu', 'cuda']).default('auto'),
  max_batch_size: posInt.default(8),
  startup_timeout_s: posInt.default(180),
});

const model = z.strictObject({
  base_url: z.url().optional().describe('OpenAI-compatible endpoint, e.g. http://localhost:8000/v1'),
  model: z.string().min(1),
  api_key_env: envName.optional().describe('name of the env var holding the API key; the key itself never goes in the file'),
  local: localServer.optional().describe('serve these weights with the built-in server instead of base_url'),
  timeout_ms: posInt.default(120_000),
  max_retries: nonNegInt.default(3),
  logprobs: z.boolean().default(true).describe('request per-token logprobs and token ids when the server supports them'),
  lora: z.strictObject({
    line: name.describe('the weight line whose LoRA adapters this server runs (e.g. the line train.base_model trains)'),
    load_adapters: z.boolean().default(true).describe('load adapters through the server\'s runtime LoRA endpoints (vLLM: --enable-lora, VLLM_ALLOW_RUNTIME_LORA_UPDATING=True)'),
  }).optional().describe('a server at base_url that serves adapters by name: a deployed adapter is requested as model LINE-vN'),
});

const prompt = z.strictObject({
  file: z.string().min(1).optional().describe('path to the prompt text, relative to the config file'),
  text: z.string().min(1).optional(),
});

const tool = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('builtin'), name: z.enum(['calculator']) }),
  z.strictObject({
    type: z.literal('command'),
    command: z.array(z.string().min(1)).min(1).describe('argument array; {arg} placeholders are filled from the call, no shell'),
    description: z.string().default(''),
    parameters: z.record(z.string(), z.string()).default({}).describe('argument name → description'),
    timeout_ms: posInt.default(30_000),
  }),
]);

const agent = z.strictObject({
  id: name,
  model: name.describe('key under models'),
  system_prompt: name.default('solver').describe('key under prompts'),
  temperature: z.number().min(0).max(2).default(0.7),
  max_tokens: posInt.default(512),
  tools: z.array(name).default([]),
  tool_mode: z.enum(['native', 'text']).default('native'),
  implicit_answer: z.boolean().default(false).describe('text mode, for tiny models: a reply without ANSWER:/VOTE: counts as an answer, and repeating an existing answer as a vote for it (marked implicit in traces)'),
});

const orchestrator = z.strictObject({
  voting_sensitivity: z.enum(['lenient', 'balanced', 'strict']).default('lenient'),
  answer_novelty_requirement: z.enum(['lenient', 'balanced', 'strict']).default('lenient'),
  max_new_answers_per_agent: posInt.optional(),
  max_orchestration_restarts: nonNegInt.default(0),
  max_rounds: posInt.default(8),
  max_action_retries: nonNegInt.default(3),
  agent_timeout_s: z.number().positive().default(300),
  total_timeout_s: z.number().positive().default(1800),
});

const taskSource = z.union([
  z.strictObject({ suite: z.enum(BUILTIN_SUITES), n: posInt.default(50), seed: z.int().default(1) }),
  z.strictObject({ file: z.string().min(1) }),
]);

const tasks = z.strictObject({
  sources: z.array(taskSource).min(1).prefault([{ suite: 'arithmetic' }]),
  split: z.strictObject({
    eval_fraction: z.number().min(0).max(1).default(0.2),
    salt: z.string().default('massgen-rl'),
  }).prefault({}),
});

const rewards = z.strictObject({
  weights: z.partialRecord(z.enum(REWARD_FAMILIES), z.number()).default({ exact: 1, numeric: 1, coordination: 0.2 }),
  numeric_tolerance: z.number().nonnegative().default(1e-6),
  judge: z.strictObject({
    model: name.optional(),
    rubric: z.array(z.strictObject({ criterion: z.string().min(1), weight: z.number().positive() })).default([]),
    max_retries: nonNegInt.default(2),
    failure_score: z.number().default(0),
  }).prefault({}),
  coordination: z.strictObject({
    free_rounds: nonNegInt.default(3),
    round_penalty: z.number().default(-0.1),
    quality_coef: z.number().default(2.0),
    token_coef: z.number().default(-0.001),
    consensus_bonus: z.number().default(1.0),
    no_consensus_penalty: z.number().default(-0.5),
  }).prefault({}),
  voting: z.strictObject({ correct: z.number().default(1.0), incorrect: z.number().default(-0.5) }).prefault({}),
  tool: z.strictObject({ success: z.number().default(1), failure: z.number().default(-1) }).prefault({}),
  custom: z.strictObject({ command: z.array(z.string().min(1)).min(1), timeout_ms: posInt.default(10_000) }).optional(),
});

const collect = z.strictObject({
  concurrency: posInt.default(2),
  samples_per_turn: posInt.default(1),
  n: posInt.optional().describe('tasks per collect run (default: all train-split tasks)'),
  split: z.enum(['train', 'eval', 'all']).default('train'),
});

const agentMatch = z.union([z.array(name).min(1), z.string().min(1)]).describe('agent ids, or a regular expression matched against the id');

const train = z.strictObject({
  algo: z.enum(ALGOS).default('grpo'),
  base_model: z.string().default(DEFAULT_MODEL_REF),
  lora: z.strictObject({
    enabled: z.boolean().default(true),
    r: posInt.default(16),
    alpha: posInt.default(32),
    dropout: z.number().min(0).max(1).default(0.05),
    target_modules: z.union([z.literal('all-linear'), z.array(z.string())]).default('all-linear'),
  }).prefault({}),
  epochs: z.number().positive().default(1),
  max_steps: posInt.optional(),
  learning_rate: z.number().positive().default(1e-5),
  batch_size: posInt.default(4).describe('examples per device per micro-batch (for grpo: completions)'),
  gradient_accumulation_steps: posInt.default(1),
  max_length: posInt.default(1024).describe('maximum tokens per training sequence'),
  seed: z.int().default(42),
  save_steps: nonNegInt.default(50).describe('save a resumable checkpoint every N steps (0: only when stopped)'),
  logging_steps: posInt.default(1),
  gradient_checkpointing: z.boolean().default(false),
  timeout_min: posInt.optional().describe('stop the trainer (with a checkpoint) after this many minutes'),
  check_memory: z.boolean().default(true).describe('refuse to start when free RAM / GPU memory looks too small for the model'),
  gpus: z.union([z.literal('auto'), z.literal('none'), z.string().regex(/^\d+(,\d+)*$/)]).default('auto'),
  num_processes: posInt.default(1).describe('> 1 launches the trainer with accelerate (data parallel; CPU processes use gloo)'),
  accelerate_config: z.string().optional().describe('accelerate config file (default for several CPU processes: the bundled one)'),
  script: z.string().optional().describe('your own trainer script speaking the JSON-lines protocol'),
  python: z.string().default('python3').describe('interpreter used to create the trainer virtualenv'),
  venv: z.string().optional().describe('trainer virtualenv (default: the shared cache dir)'),
  deepspeed: z.string().optional(),
  fsdp: z.string().optional(),
  sft: z.strictObject({
    reward_threshold: z.number().nullable().default(0.5).describe('minimum reward of a turn (or its rollout) to learn from; null keeps all'),
    agents: agentMatch.optional(),
    include_presentation: z.boolean().default(true),
  }).prefault({}),
  grpo: z.strictObject({
    agents: agentMatch.optional(),
    min_group_size: z.int().min(2).default(2),
    mode: z.enum(['offline', 'online']).default('offline').describe('offline replays recorded completions; online samples from the policy, scored by the reward bridge'),
    num_generations: z.int().min(2).default(4).describe('completions per prompt in a training group'),
    beta: z.number().nonnegative().default(0).describe('KL penalty towards the starting policy'),
    max_completion_length: posInt.default(256),
    temperature: z.number().positive().default(1.0).describe('sampling temperature (online mode)'),
  }).prefault({}),
  dpo: z.strictObject({
    beta: z.number().positive().default(0.1),
    min_margin: z.number().nonnegative().default(0),
    system_prompt: z.string().min(1).optional(),
    max_pairs_per_task: posInt.default(16),
  }).prefault({}),
  ppo: z.strictObject({
    beta: z.number().nonnegative().default(0),
    clip_epsilon: z.number().positive().default(0.2),
    old_logprobs: z.enum(['recompute', 'recorded']).default('recompute').describe('recompute: treat the data as sampled from the start weights; recorded: use the logprobs stored with the traces'),
    max_completion_length: posInt.default(256),
    credit: z.enum(['final', 'discounted']).default('final'),
    gamma: z.number().gt(0).max(1).default(0.9),
    agents: agentMatch.optional(),
  }).prefault({}),
  gates: z.strictObject({
    min_examples: posInt.default(8),
    min_clean_share: z.number().min(0).max(1).default(0.5),
    min_categories: posInt.default(1),
  }).prefault({}),
});

const evaluation = z.strictObject({
  split: z.enum(['train', 'eval', 'all']).default('eval'),
  n: posInt.optional().describe('tasks per evaluation (default: every task of the split)'),
  tasks: z.string().min(1).optional().describe('a built-in suite or a task file to evaluate on, instead of tasks.sources'),
  seeds: posInt.max(100).default(1).describe('sampling seeds per task: baseline and candidate run on the same tasks and seeds'),
  concurrency: posInt.optional().describe('orchestrations at a time (default collect.concurrency)'),
  metric: z.enum(['mean_reward', 'success_rate']).default('mean_reward').describe('the primary metric: wins, gates and the headline difference'),
  bootstrap: z.strictObject({
    resamples: z.int().min(1000).max(1_000_000).default(10_000),
    confidence: z.number().gt(0.5).lt(1).default(0.95),
    seed: z.int().default(1),
  }).prefault({}),
  report: z.boolean().default(true).describe('write the HTML report after each evaluation'),
});

const deploy = z.strictObject({
  auto: z.boolean().default(true).describe('loop: promote a candidate whose gates pass (false: evaluate and report only)'),
  keep_history: posInt.default(20),
  rollback_on_regression: z.boolean().default(true).describe('watch production after a deploy and roll back on a significant drop'),
  gates: z.strictObject({
    min_improvement: z.number().default(0).describe('the candidate\'s mean improvement on eval.metric must be at least this'),
    ci_lower_above_zero: z.boolean().default(true).describe('the lower bound of the paired-bootstrap CI of the improvement must be above 0'),
    max_category_regression: z.number().nonnegative().default(0.1).describe('no task category may lose more than this on eval.metric'),
    max_cost_increase: z.number().nonnegative().nullable().default(0.5).describe('tokens per task may grow by at most this share (null: no ceiling)'),
  }).prefault({}),
  canary: z.strictObject({
    fraction: z.number().min(0).max(1).default(0).describe('loop: deploy through a canary serving this share of collects first (0: no canary)'),
    min_rollouts: posInt.default(20).describe('canary rollouts needed before its gates decide promotion'),
  }).prefault({}),
  watch: z.strictObject({
    min_rollouts: posInt.default(10).describe('production rollouts after a deploy before it is judged'),
    max_drop: z.number().nonnegative().default(0.05).describe('a drop of mean reward beyond this, significant at alpha, rolls back'),
    alpha: z.number().gt(0).lt(1).default(0.05),
  }).prefault({}),
  export_massgen: z.string().min(1).optional().describe('also write a MassGen config of production here after each deploy'),
});

const loop = z.strictObject({
  schedule: z.string().default('0 2 * * *').describe('cron expression (5 or 6 fields)'),
  steps: z.array(z.enum(LOOP_STEPS)).min(1).default([...LOOP_STEPS]),
  max_runtime_min: posInt.default(360).describe('a cycle stops (resumable) after this many minutes'),
  stage_timeout_min: z.partialRecord(z.enum(LOOP_STEPS), posInt).default({}).describe('per stage limits in minutes'),
  collect_n: posInt.optional().describe('tasks per cycle collect (default collect.n)'),
  min_new_traces: nonNegInt.default(1).describe('train only when at least this many rollouts completed since the last training run'),
  stale_lock_min: posInt.default(30).describe('a lock held by another machine with no heartbeat for this long is taken over'),
});

const privacy = z.strictObject({
  redact_patterns: z.array(z.string().min(1)).default([]).describe('regular expressions scrubbed from everything stored or logged'),
  redact_env: z.array(envName).default([]).describe('env vars whose values are scrubbed (model api_key_env vars always are)'),
  builtin_patterns: z.boolean().default(true).describe('also scrub common key formats (sk-…, Bearer …, hf_…, AKIA…)'),
});

export const configSchema = z.strictObject({
  $schema: z.string().optional(),
  project: z.strictObject({
    name: name.default('massgen-rl'),
    data_dir: z.string().min(1).default('.massgen-rl').describe('relative to the config file'),
  }).prefault({}),
  store: z.strictObject({
    path: z.string().min(1).optional().describe('SQLite file (default: <data_dir>/store.sqlite)'),
    busy_timeout_ms: posInt.default(15_000),
  }).prefault({}),
  models: z.record(name, model).prefault(defaultModels),
  prompts: z.record(name, prompt).prefault(defaultPrompts),
  tools: z.record(name, tool).default({}),
  agents: z.array(agent).min(1).prefault(defaultAgents),
  orchestrator: orchestrator.prefault({}),
  tasks: tasks.prefault({}),
  rewards: rewards.prefault({}),
  collect: collect.prefault({}),
  train: train.prefault({}),
  eval: evaluation.prefault({}),
  deploy: deploy.prefault({}),
  loop: loop.prefault({}),
  privacy: privacy.prefault({}),
});

export type RLConfig = z.output<typeof configSchema>;
export type RLConfigInput = z.input<typeof configSchema>;
export type ModelConfig = z.output<typeof model>;
export type AgentConfig = z.output<typeof agent>;
export type PrivacyConfig = RLConfig['privacy'];
export type TrainConfig = RLConfig['train'];
export type Algo = (typeof ALGOS)[number];
