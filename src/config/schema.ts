import { z } from 'zod';
import { defaultAgents, defaultModels, defaultPrompts, DEFAULT_MODEL_REF } from './defaults.js';
import { rolloutProblem } from './rollout-stages.js';

/** The engines of the built-in server (`serve --engine`). */
export const SERVE_ENGINES = ['auto', 'llama.cpp', 'transformers', 'vllm'] as const;

export const BUILTIN_SUITES = ['arithmetic', 'unit_conversion', 'string_transform', 'multi_step'] as const;
/** A built-in suite's difficulty levels: 0 the easiest (the default), 1 easier than the original tasks, 2 the original tasks, 3 harder. */
export const DIFFICULTIES = [0, 1, 2, 3] as const;
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
  'custom',
  'human',
] as const;
export const ALGOS = ['grpo', 'sft', 'dpo', 'ppo'] as const;
export const LOOP_STEPS = ['collect', 'review', 'train', 'prompt_opt', 'eval', 'deploy'] as const;
/** The loop's stages unless loop.steps says otherwise (prompt optimization, `prompt_opt`, runs only when listed). */
export const DEFAULT_LOOP_STEPS = ['collect', 'review', 'train', 'eval', 'deploy'] as const;
/** The orchestration decisions a learned policy can take (`train policy KIND`). */
export const POLICY_KINDS = ['routing', 'stop', 'tool', 'delegate'] as const;
export const POLICY_ALGORITHMS = ['linucb', 'thompson', 'beta'] as const;

const name = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'use letters, digits, "_", "." or "-" (starting with a letter or digit)');
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name');
const posInt = z.int().positive();
const nonNegInt = z.int().nonnegative();

// Every number has a ceiling: Node fires timers of 2^31 ms or more after 1 ms, and counts drive allocations.
const HOUR_S = 3600;
const DAY_S = 24 * HOUR_S;
const WEEK_S = 7 * DAY_S;
/** A timeout in milliseconds, at most `maxS` seconds. */
const timeoutMs = (maxS = DAY_S) => posInt.max(maxS * 1000, `at most ${maxS * 1000} ms (${describeSeconds(maxS)})`);
const timeoutS = (maxS = DAY_S) =>
  z
    .number()
    .positive()
    .max(maxS, `at most ${maxS} s (${describeSeconds(maxS)})`);
const count = (max: number) => posInt.max(max);
const retries = nonNegInt.max(100);
/** A reward amount or coefficient. */
const amount = z.number().min(-1e6).max(1e6);
const seed = z
  .int()
  .min(0)
  .max(2 ** 32 - 1, 'at most 4294967295 (a 32-bit seed)');
/** The longest path (PATH_MAX, in characters here) and name in a path (NAME_MAX, in bytes) Linux takes. */
const PATH_MAX = 4096;
const NAME_MAX = 255;
/**
 * A file or directory path: one the file system can take, or the field is named here, instead of a
 * store path derived from it failing later (or a directory named with U+FFFD being created).
 */
const filePath = () =>
  z
    .string()
    .min(1)
    .superRefine((p, ctx) => {
      const problem = pathProblem(p);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    });

function pathProblem(p: string): string | undefined {
  if (p.length > PATH_MAX) return `at most ${PATH_MAX} characters (the longest path the system takes), got ${p.length}`;
  if (p.includes('\0')) return 'must not contain a NUL character';
  if (/\p{Cs}/u.test(p)) return 'must not contain a lone surrogate (half of a UTF-16 pair, not valid Unicode)';
  const long = p.split(/[\\/]/).find((part) => Buffer.byteLength(part) > NAME_MAX);
  const bytes = long === undefined ? 0 : Buffer.byteLength(long);
  return long && `"${long.slice(0, 8)}…" is ${bytes} bytes: a name in a path is at most ${NAME_MAX}`;
}

export const MAX_TASKS = 100_000;
export const MAX_CONCURRENCY = 256;
export const MAX_STEPS = 10_000_000;

function describeSeconds(s: number): string {
  return s % WEEK_S === 0
    ? `${s / WEEK_S} week${s === WEEK_S ? '' : 's'}`
    : s % DAY_S === 0
      ? `${s / DAY_S} day${s === DAY_S ? '' : 's'}`
      : `${s / HOUR_S} hours`;
}

/** The port `massgen-rl serve` listens on, and a MassGen export points at, for a local model without local.port. */
export const DEFAULT_SERVE_PORT = 8321;

const localServer = z.strictObject({
  weights: z
    .string()
    .min(1)
    .describe('builtin:<name>, a weight resource "resource:<name>[@version]", or a path to an HF folder'),
  host: z.string().default('127.0.0.1'),
  port: nonNegInt
    .max(65535)
    .default(0)
    .describe(
      `a fixed port for this model's server; 0 (the default): the servers that collect and eval start pick a free port, while \`massgen-rl serve\` listens on ${DEFAULT_SERVE_PORT} and \`resources export-massgen\` points MassGen there`,
    ),
  device: z.enum(['auto', 'cpu', 'cuda']).default('auto'),
  engine: z
    .enum(SERVE_ENGINES)
    .default('auto')
    .describe('auto: vLLM on a CUDA GPU when installed, else llama.cpp on the CPU when installed, else transformers'),
  max_batch_size: count(1024)
    .default(16)
    .describe('most sequences generated at once (llama.cpp: running together; transformers: per batch)'),
  startup_timeout_s: posInt.max(DAY_S, `at most ${DAY_S} s (1 day)`).default(180),
});

const httpUrl = () =>
  z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL, e.g. http://localhost:8000/v1' });
export const MAX_REPLICAS = 256;

const model = z.strictObject({
  base_url: httpUrl().optional().describe('OpenAI-compatible endpoint, e.g. http://localhost:8000/v1'),
  base_urls: z
    .array(httpUrl())
    .min(2, 'list at least 2 replicas (for one endpoint use base_url)')
    .max(MAX_REPLICAS)
    .optional()
    .describe(
      'replicas serving the same model, each an OpenAI-compatible endpoint: requests go to the one with the fewest under way, and fail over from one that is down (instead of base_url)',
    ),
  model: z.string().min(1),
  api_key_env: envName
    .optional()
    .describe('name of the env var holding the API key; the key itself never goes in the file'),
  local: localServer
    .optional()
    .describe('serve these weights with the built-in server instead of base_url or base_urls'),
  timeout_ms: timeoutMs().default(120_000),
  max_retries: retries.default(3),
  logprobs: z
    .boolean()
    .default(true)
    .describe('request per-token logprobs and token ids when the server supports them'),
  stream: z
    .boolean()
    .optional()
    .describe(
      "stream chat completions (server-sent events), recording each call's time to first token (ttft_ms); a server that rejects streaming is asked without it from then on (default: true for local models, false for base_url and base_urls)",
    ),
  lora: z
    .strictObject({
      line: name.describe(
        'the weight line whose LoRA adapters this server runs (e.g. the line train.base_model trains)',
      ),
      load_adapters: z
        .boolean()
        .default(true)
        .describe(
          "load adapters through the server's runtime LoRA endpoints (vLLM: --enable-lora, VLLM_ALLOW_RUNTIME_LORA_UPDATING=True)",
        ),
    })
    .optional()
    .describe(
      'a server at base_url (or each replica of base_urls) that serves adapters by name: a deployed adapter is requested as model LINE-vN',
    ),
});

const prompt = z.strictObject({
  file: filePath().optional().describe('path to the prompt text, relative to the config file'),
  text: z.string().min(1).optional(),
});

const tool = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('builtin'), name: z.enum(['calculator']) }),
  z.strictObject({
    type: z.literal('command'),
    command: z
      .array(z.string().min(1))
      .min(1)
      .describe('argument array; {arg} placeholders are filled from the call, no shell'),
    description: z.string().default(''),
    parameters: z.record(z.string(), z.string()).default({}).describe('argument name → description'),
    timeout_ms: timeoutMs().default(30_000),
  }),
]);

const agent = z.strictObject({
  id: name,
  model: name.describe('key under models'),
  system_prompt: name.default('solver').describe('key under prompts'),
  temperature: z.number().min(0).max(2).default(0.7),
  max_tokens: count(1_048_576).default(512),
  tools: z.array(name).default([]),
  tool_mode: z.enum(['native', 'text']).default('native'),
  implicit_answer: z
    .boolean()
    .default(false)
    .describe(
      'text mode, for tiny models: a reply without ANSWER:/VOTE: counts as an answer, and repeating an existing answer as a vote for it (marked implicit in traces)',
    ),
});

export const delegationSchema = z.strictObject({
  enabled: z
    .boolean()
    .default(false)
    .describe('offer every agent a delegate tool that hands a subtask to a child orchestration'),
  max_depth: count(8)
    .default(1)
    .describe('levels of child orchestrations below the team; agents at this depth get no delegate tool'),
  max_delegations: count(1000)
    .default(2)
    .describe('delegate calls per orchestration, all depths together; later calls get an error result'),
  max_child_tokens: count(100_000_000)
    .default(4000)
    .describe(
      'token budget of one child orchestration (its own children included); over it the child stops and presents what it has',
    ),
  shape: z
    .enum(['team', 'solo'])
    .default('team')
    .describe('the child team: every agent of the team, or the delegating agent alone'),
});

const orchestrator = z.strictObject({
  voting_sensitivity: z.enum(['lenient', 'balanced', 'strict']).default('lenient'),
  answer_novelty_requirement: z.enum(['lenient', 'balanced', 'strict']).default('lenient'),
  max_new_answers_per_agent: count(1000).optional(),
  max_orchestration_restarts: nonNegInt.max(100).default(0),
  max_rounds: count(1000).default(8),
  max_action_retries: retries.default(3),
  agent_timeout_s: timeoutS().default(300),
  total_timeout_s: timeoutS(WEEK_S).default(1800),
  // Optional, not defaulted: a config without it keeps its evaluation keys (evaluation/keys.ts hashes this section).
  delegation: delegationSchema
    .optional()
    .describe('hierarchical delegation: child orchestrations on subtasks (off when absent)'),
  prompt_layout: z
    .enum(['protocol', 'answers', 'independent'])
    .optional()
    .describe(
      "how text-mode agents are prompted: protocol (absent: the task, every answer under its label and the ANSWER:/VOTE: rules); answers (for small models: the task as a user asks it; every agent's first answer is its own, later turns also see the other agents' final answers in one line, and a reply repeating one is a vote for it); independent (self-consistency: every agent answers the task once on its own, a final answer equal to an earlier one is a vote for it, an agent's own answer counts as its vote, and the answer most agents reached wins). In answers and independent the winner's answer is the final answer, without a presentation call",
    ),
  presenter_prompt: name
    .optional()
    .describe(
      "key under prompts: the system prompt the winning agent presents the final answer with, a versioned prompt of its own (absent: the winner's own system prompt)",
    ),
});

const policies = z.strictObject({
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
      'decisions collect explores uniformly while production has no policy for them (to gather the first training data)',
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
      'a model (models.*) with an OpenAI /v1/embeddings endpoint: its embedding of the task joins the routing, tool and delegate features',
    ),
  min_decisions: count(1_000_000)
    .default(20)
    .describe('train policy refuses to fit a policy on fewer logged decisions'),
});

const promptOpt = z.strictObject({
  prompts: z
    .array(name)
    .min(1)
    .optional()
    .describe(
      "prompts (keys under prompts) optimized together (default: every agent's system prompt, and orchestrator.presenter_prompt when set)",
    ),
  optimizer_model: name
    .optional()
    .describe(
      "the model (models.*) that reads traces and proposes edits (default: the first agent's model; a 135M model is a weak optimizer, a stronger endpoint helps)",
    ),
  rounds: count(1000).default(4).describe('proposals (reflective mutations or merges) tried'),
  edit: z
    .enum(['auto', 'rewrite', 'advice'])
    .default('auto')
    .describe(
      'rewrite: the optimizer rewrites the whole prompt from the traces; advice: it writes one sentence of advice, added to the prompt (for small optimizer models); auto: advice when the optimizer is the bundled model, else rewrite',
    ),
  val_n: count(MAX_TASKS)
    .default(8)
    .describe('train-split tasks every accepted candidate is scored on (the Pareto front is over them)'),
  minibatch: count(1000)
    .default(3)
    .describe(
      'train-split tasks (outside the validation batch when there are enough) a proposal is read from and first tried on',
    ),
  seeds: count(100).default(1).describe('sampling seeds per task: every candidate runs on the same tasks and seeds'),
  examples: count(20).default(2).describe('low- and high-reward rollouts the optimizer reads per proposal (each)'),
  merge_every: nonNegInt
    .max(1000)
    .default(3)
    .describe(
      'every Nth proposal is a merge of two front candidates into a team not tried yet (a reflective mutation when no pair gives one; 0: never merge)',
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

const taskSource = z.union([
  z.strictObject({
    suite: z.enum(BUILTIN_SUITES),
    n: count(MAX_TASKS).default(50),
    seed: seed.default(1),
    difficulty: z
      .literal(DIFFICULTIES, { error: 'must be 0, 1, 2 or 3' })
      .optional()
      .describe(
        "0: the easiest, within the bundled model's reach (the default), 1: easier than the original tasks, 2: the original tasks, 3: harder (`massgen-rl tasks` lists each suite's levels)",
      ),
  }),
  z.strictObject({ file: filePath() }),
]);

/** tasks.max_prompt_chars unless the config says otherwise: a long document fits, a runaway file does not. */
export const DEFAULT_MAX_PROMPT_CHARS = 100_000;

const curriculum = z
  .strictObject({
    enabled: z
      .boolean()
      .default(false)
      .describe('off: every collect and evaluation draws tasks.sources as they are (each suite at its difficulty)'),
    threshold: z
      .number()
      .gt(0)
      .max(1)
      .default(0.7)
      .describe("production's success at a suite's level from which its next collect draws from the next level"),
    min_tasks: count(MAX_TASKS)
      .default(20)
      .describe("production's scored collect results a suite needs at its level before it may advance"),
    replay: z
      .number()
      .min(0)
      .lt(1, 'must be below 1 (a collect draws most of its tasks from the current level)')
      .default(0.2)
      .describe("share of a collect's tasks drawn from the levels below a suite's current one"),
    start_level: z
      .literal(DIFFICULTIES, { error: 'must be 0, 1, 2 or 3' })
      .default(0)
      .describe('the level every suite starts at (a suite never sits below it)'),
    max_level: z
      .literal(DIFFICULTIES, { error: 'must be 0, 1, 2 or 3' })
      .default(3)
      .describe('the highest level a suite moves up to'),
  })
  .refine((c) => c.start_level <= c.max_level, {
    message: 'must not be above max_level',
    path: ['start_level'],
  })
  .describe(
    'built-in suites move up a difficulty level when production succeeds on theirs; evaluation covers the levels below (docs/running-the-loop.md)',
  );

const tasks = z.strictObject({
  curriculum: curriculum.prefault({}),
  sources: z
    .array(taskSource)
    .min(1)
    .prefault([{ suite: 'arithmetic' }]),
  max_prompt_chars: count(10_000_000)
    .default(DEFAULT_MAX_PROMPT_CHARS)
    .describe(
      'a task whose prompt is longer (in characters) is refused with its file and line; a line or string of a '
        + 'task file too long to hold a task under this limit is refused as it is read, before the rest of the file',
    ),
  split: z
    .strictObject({
      eval_fraction: z.number().min(0).max(1).default(0.2),
      salt: z.string().default('massgen-rl'),
      holdout_templates: z
        .number()
        .min(0)
        .lt(1, 'must be below 1 (every kind keeps a template for train)')
        .default(0.25)
        .describe(
          'built-in suites: per suite and kind, about this fraction of the prompt templates is eval-only (every task using one is in the eval split; a kind keeps at least one train template; 0: none); the other tasks split by eval_fraction',
        ),
    })
    .prefault({}),
});

const rewards = z.strictObject({
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
  custom: z
    .strictObject({ command: z.array(z.string().min(1)).min(1), timeout_ms: timeoutMs().default(10_000) })
    .optional(),
});

const collect = z.strictObject({
  concurrency: count(MAX_CONCURRENCY).default(2),
  samples_per_turn: count(64).default(1),
  n: count(MAX_TASKS).optional().describe('tasks per collect run (default: all train-split tasks)'),
  split: z.enum(['train', 'eval', 'all']).default('train'),
  source: z
    .enum(['orchestrate', 'gateway'])
    .default('orchestrate')
    .describe(
      'orchestrate: collect runs tasks through the agent team; gateway: it runs nothing and takes the gateway sessions finished since the last such collect (less the gateway.holdout share; sessions without a reward wait for feedback or the judge) as the training data (docs/collect.md)',
    ),
});

const queue = z.strictObject({
  distributed: z
    .boolean()
    .default(false)
    .describe(
      'collect and eval stages of loop (and eval) put their orchestrations on the shared queue of the PostgreSQL store and wait for `collect --worker` processes on any machine instead of running them themselves',
    ),
  retries: z
    .number()
    .int()
    .min(0)
    .max(20)
    .default(3)
    .describe('times a job is run again after its worker died or stopped'),
  expire_s: z
    .number()
    .int()
    .min(60)
    .max(7 * 24 * 3600)
    .default(4 * 3600)
    .describe(
      'a job active this long is given up by the queue and retried (dead workers are found sooner, by their lease)',
    ),
});

const agentMatch = z
  .union([z.array(name).min(1), z.string().min(1)])
  .describe('agent ids, or a regular expression matched against the id');
/**
 * A train.<algo> section: the data selection declared here, and the trainer's settings (TRL's names:
 * num_train_epochs, per_device_train_batch_size, num_generations, beta, …) passed through as they are. The
 * trainer's dataclass declares and checks those (trainers/massgen_rl_trainers/train/<algo>.py, run as
 * train.check by doctor and train).
 */
function trainerSection<S extends z.core.$ZodLooseShape>(shape: S) {
  const section = z.looseObject(shape);
  return section.prefault({} as z.input<typeof section>);
}

const hostName = z
  .string()
  .regex(/^[A-Za-z0-9:]([A-Za-z0-9.:-]*[A-Za-z0-9])?$/, 'a host name or an IP address, e.g. 10.0.0.1');
const port = z.int().min(1).max(65535);

/** The data selection of each train.<algo> section: what the dataset of a run takes from the traces. */
const selection = {
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
        'reward: answers and presentations whose reward reaches reward_threshold; verified: rejection-sampling fine-tuning, only completions (answers and collect.samples_per_turn samples) that an exact or numeric reward verified right',
      ),
    max_per_task: count(10_000)
      .default(4)
      .describe('select verified: rows per task at most, so tasks the model already solves do not crowd out the rest'),
    rationalize: z
      .strictObject({
        enabled: z.boolean().default(true),
        samples: count(64).default(4).describe('replies asked for per task'),
        max_tasks: count(100_000).default(64).describe('tasks asked about per dataset build at most'),
      })
      .optional()
      .describe(
        'select verified (STaR): for each train task with a reference that no completion got right, ask the model again with the reference as a hint and add the replies that reach it (without the hint) as rows',
      ),
    teacher: z
      .strictObject({
        model: z.string().min(1).describe('the config model (a key of models) that teaches'),
        samples: count(64).default(1).describe('replies asked for per task'),
        max_tasks: count(100_000).default(64).describe('tasks asked about per dataset build at most'),
      })
      .optional()
      .describe(
        'select verified: for each train task with a reference that no completion got right, ask this model (no hint) and add its verified-right replies as rows',
      ),
  },
  grpo: {
    agents: agentMatch.optional(),
    min_group_size: z.int().min(2).max(1024).default(2),
    on_policy: z
      .boolean()
      .default(true)
      .describe(
        "offline mode: learn only from completions served by the weights training starts from (the rollout resource set records them); false also replays other weights' completions as if the policy had sampled them",
      ),
  },
  dpo: {
    min_margin: z.number().nonnegative().max(1e6).default(0),
    system_prompt: z.string().min(1).optional(),
    max_pairs_per_task: count(100_000).default(16),
    pairs: z
      .enum(['winner', 'correctness'])
      .default('winner')
      .describe(
        "winner: the winner's answer against the others of its rollout, and better final answers of a task against worse (by reward); correctness: every verified-correct answer of a task (exact or numeric reward 1) against its verified-wrong ones, whoever won",
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

const train = z.strictObject({
  algo: z.enum(ALGOS).default('grpo'),
  base_model: z.string().default(DEFAULT_MODEL_REF),
  lora: z
    .strictObject({
      enabled: z.boolean().default(true),
      r: count(4096).default(16),
      alpha: count(65_536).default(32),
      dropout: z.number().min(0).max(1).default(0.05),
      target_modules: z.union([z.literal('all-linear'), z.array(z.string())]).default('all-linear'),
    })
    .prefault({}),
  timeout_min: count(WEEK_S / 60)
    .optional()
    .describe('stop the trainer (with a checkpoint) after this many minutes'),
  check_memory: z
    .boolean()
    .default(true)
    .describe('refuse to start when free RAM / GPU memory looks too small for the model'),
  gpus: z.union([z.literal('auto'), z.literal('none'), z.string().regex(/^\d+(,\d+)*$/)]).default('auto'),
  num_processes: count(1024)
    .default(1)
    .describe(
      "processes in all, over every machine (accelerate's --num_processes; a multiple of num_machines); > 1 launches the trainer with accelerate (data parallel; CPU processes use gloo)",
    ),
  num_machines: count(1024)
    .default(1)
    .describe(
      "machines training together (accelerate's --num_machines); each runs `massgen-rl train` with its own machine_rank",
    ),
  machine_rank: nonNegInt
    .max(1023)
    .default(0)
    .describe(
      "this machine's rank, 0 to num_machines - 1 (or `train --machine-rank`): 0 is the main machine, which records the run and its checkpoint; the others only train along",
    ),
  main_process_ip: hostName
    .optional()
    .describe('address of machine 0 that every machine can reach (required with num_machines > 1)'),
  main_process_port: port
    .optional()
    .describe('rendezvous port on machine 0 (default: a free port on one machine, 29500 over several)'),
  accelerate_config: z
    .string()
    .optional()
    .describe(
      'accelerate config file, e.g. trainers/accelerate/deepspeed-zero2.yaml, deepspeed-zero3.yaml or fsdp.yaml (default for several CPU processes: cpu-2proc.yaml)',
    ),
  script: z.string().optional().describe('your own trainer script speaking the JSON-lines protocol'),
  python: z.string().default('python3').describe('interpreter used to create the trainer virtualenv'),
  venv: z.string().optional().describe('trainer virtualenv (default: the shared cache dir)'),
  deepspeed: z.string().optional(),
  fsdp: z.string().optional(),
  bf16: z
    .union([z.literal('auto'), z.boolean()])
    .default('auto')
    .describe(
      'bf16 mixed precision (float32 master weights): auto uses it on a CUDA GPU with bf16 and on a CPU that computes bf16 natively (AVX512-BF16 or AMX), about 1.5× faster there; false: float32 throughout',
    ),
  sft: trainerSection(selection.sft),
  grpo: trainerSection(selection.grpo),
  dpo: trainerSection(selection.dpo),
  ppo: trainerSection(selection.ppo),
  gates: z
    .strictObject({
      min_examples: count(MAX_STEPS).default(8),
      min_clean_share: z.number().min(0).max(1).default(0.5),
      min_categories: count(MAX_TASKS).default(1),
    })
    .prefault({}),
});

/** A role's recipe: how its weights (or prompts, or policies) learn. The weight recipes are the trainers' algorithms. */
export const RECIPES = [...ALGOS, 'bandit', 'apo'] as const;

/** A selection shape without `agents`: in a role, the role's members choose the calls. */
function withoutAgents<S extends z.core.$ZodLooseShape & { agents?: unknown }>(shape: S): Omit<S, 'agents'> {
  const { agents, ...rest } = shape;
  void agents;
  return rest;
}

/** A weight recipe: the keys and defaults of train.<algo> (its data selection and the trainer's settings). */
function weightRecipe<A extends Algo, S extends z.core.$ZodLooseShape>(algo: A, shape: S) {
  return z.looseObject({ algo: z.literal(algo), ...shape }).superRefine((r, ctx) => {
    if (Object.hasOwn(r, 'agents'))
      ctx.addIssue({
        code: 'custom',
        path: ['agents'],
        message: "a role's members choose its calls (roles.<name>.agents): leave agents out of the recipe",
      });
  });
}

const recipe = z
  .discriminatedUnion('algo', [
    weightRecipe('sft', withoutAgents(selection.sft)),
    weightRecipe('dpo', selection.dpo),
    weightRecipe('grpo', withoutAgents(selection.grpo)),
    weightRecipe('ppo', withoutAgents(selection.ppo)),
    z.strictObject({
      algo: z.literal('bandit'),
      ...policies.pick({
        algorithm: true,
        alpha: true,
        lambda: true,
        noise: true,
        cost_per_1k_tokens: true,
        min_decisions: true,
      }).shape,
    }),
    z.strictObject({ algo: z.literal('apo'), ...promptOpt.omit({ prompts: true }).shape }),
  ])
  .describe(
    "algo (sft, dpo, grpo, ppo: the role's weights; bandit: its policies; apo: its agents' system prompts) and that algorithm's keys, with the defaults of train.<algo>, policies or prompt_opt (a recipe does not inherit those sections' values)",
  );

const roleWeights = z
  .strictObject({
    lora: name
      .optional()
      .describe('a LoRA adapter line on the shared base (train.base_model): the role trains adapters of this line'),
    model: name
      .optional()
      .describe(
        "its own model (a key under models) that every agent of the role runs on: the role trains that model's weights",
      ),
  })
  .refine((w) => (w.lora === undefined) !== (w.model === undefined), {
    message: 'set exactly one of lora (an adapter line on the shared base) or model (its own model)',
  });

const role = z
  .strictObject({
    agents: z
      .array(name)
      .max(1000)
      .default([])
      .describe("agent ids whose calls are this role's: their answers, votes and every other call of their turns"),
    presenter: z
      .boolean()
      .default(false)
      .describe("the presentation call is this role's, whichever agent won (unclaimed: the presenting agent's role)"),
    delegate: z
      .boolean()
      .default(false)
      .describe(
        "the calls of delegated sub-tasks (child orchestrations) are this role's (unclaimed: each calling agent's role)",
      ),
    policies: z
      .array(z.enum(POLICY_KINDS))
      .default([])
      .describe("the orchestration decisions (routing, stop, tool, delegate) that are this role's (recipe bandit)"),
    weights: roleWeights
      .optional()
      .describe('the weight line the role runs on and trains: lora (an adapter on the shared base) or model'),
    recipe: recipe.optional().describe("how the role learns (absent: the role's weights and prompts stay as they are)"),
  })
  .refine((r) => r.agents.length > 0 || r.presenter || r.delegate || r.policies.length > 0, {
    message: 'a role needs members: agents, presenter: true, delegate: true or policies',
  });

const evaluation = z.strictObject({
  split: z.enum(['train', 'eval', 'all']).default('eval'),
  n: count(MAX_TASKS).optional().describe('tasks per evaluation (default: every task of the split)'),
  tasks: z
    .string()
    .min(1)
    .optional()
    .describe('a built-in suite (or <suite>@<difficulty 0–3>) or a task file to evaluate on, instead of tasks.sources'),
  seeds: count(100)
    .default(1)
    .describe('sampling seeds per task: baseline and candidate run on the same tasks and seeds'),
  concurrency: count(MAX_CONCURRENCY)
    .optional()
    .describe(
      "orchestrations at a time (default: enough to keep each model server's batch full, max_batch_size / agents, and at least collect.concurrency)",
    ),
  metric: z
    .enum(['mean_reward', 'success_rate'])
    .default('mean_reward')
    .describe('the primary metric: wins, gates and the headline difference'),
  bootstrap: z
    .strictObject({
      resamples: z.int().min(1000).max(1_000_000).default(10_000),
      confidence: z.number().gt(0.5).lt(1).default(0.95),
      seed: seed.default(1),
    })
    .prefault({}),
  report: z.boolean().default(true).describe('write the HTML report after each evaluation'),
  source: z
    .enum(['tasks', 'gateway'])
    .default('tasks')
    .describe(
      'what an evaluation runs: orchestrations of tasks, or a replay of the held-out captured gateway calls (gateway.holdout) against both sets',
    ),
  replay: z
    .strictObject({
      max_prompts: count(MAX_TASKS).default(100).describe('captured calls replayed, newest first'),
      judge_model: name
        .optional()
        .describe(
          'the config model that compares the two answers of a call without a reference (default rewards.judge.model)',
        ),
      temperature: z
        .number()
        .min(0)
        .max(2)
        .default(0)
        .describe("sampling temperature of both sides, instead of the captured call's"),
    })
    .prefault({}),
});

const deploy = z.strictObject({
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
      "with roles: the gates apply to each changed role's own effect too (its leave-one-in set against production), and only the roles that pass are promoted; false: the team's candidate is promoted whole when its gates pass",
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
          'a category fails max_category_regression only when its paired-bootstrap CI also lies wholly below 0 (false: any mean loss beyond the tolerance fails, however few its tasks)',
        ),
      max_cost_increase: z
        .number()
        .min(0)
        .max(1000)
        .nullable()
        .default(0.5)
        .describe('tokens per task may grow by at most this share (null: no ceiling)'),
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
      "a canary's shares of traffic by stage, e.g. [0.1, 0.5, 1.0]: it starts at the first, review advances it when its gates pass at a stage (1.0: passing promotes) and rolls it back on a significant drop (deploy.watch.max_drop, alpha); unset: a canary stays at its fraction",
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
      'write production as a MassGen config (YAML) to this file, relative to the config file, after each deploy, canary promotion and rollback',
    ),
});

const loop = z.strictObject({
  schedule: z.string().default('0 2 * * *').describe('cron expression (5 or 6 fields)'),
  steps: z
    .array(z.enum(LOOP_STEPS))
    .min(1)
    .default([...DEFAULT_LOOP_STEPS])
    .describe(
      'stages of a cycle, run in the order collect, review, train, prompt_opt, eval, deploy (review: a canary or a deploy judged on the rollouts since; prompt_opt: prompt optimization (train prompts); eval takes the newest candidate)',
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

const privacy = z.strictObject({
  redact_patterns: z
    .array(z.string().min(1))
    .default([])
    .describe('regular expressions scrubbed from everything stored or logged'),
  redact_env: z
    .array(envName)
    .default([])
    .describe('env vars whose values are scrubbed (model api_key_env vars always are)'),
  builtin_patterns: z.boolean().default(true).describe('also scrub common key formats (sk-…, Bearer …, hf_…, AKIA…)'),
});

/** The port `massgen-rl gateway` listens on without --port or gateway.port. */
export const DEFAULT_GATEWAY_PORT = 8330;

const gateway = z.strictObject({
  host: hostName
    .default('127.0.0.1')
    .describe('address the gateway listens on; without api_keys_env only a loopback address is allowed'),
  port: nonNegInt.max(65535).default(DEFAULT_GATEWAY_PORT).describe('port of the gateway; 0 picks a free one'),
  api_keys_env: z
    .array(envName)
    .max(64)
    .default([])
    .describe(
      'environment variables each holding a key clients send as `Authorization: Bearer <key>`; the keys are never stored or logged (none: loopback clients only)',
    ),
  session_idle_s: timeoutS()
    .default(300)
    .describe(
      "a session without X-Session-Id or `user` ends after this long without a call from its client; any session's rollout is closed after this long idle",
    ),
  flush_ms: posInt
    .max(60_000)
    .default(200)
    .describe('captured calls wait at most this long in memory before they are written (one transaction per batch)'),
  batch_size: count(100_000).default(256).describe('captured calls that trigger a write before flush_ms'),
  aliases: z
    .record(name, z.strictObject({ model: name, agent: z.string().min(1).max(256).optional() }))
    .default({})
    .describe(
      'model names clients may send instead of a config model: each routes to `model` and, with `agent`, names the agent of its calls (as X-Agent-Id does)',
    ),
  agents: z
    .record(
      z.string().min(1).max(256),
      z.strictObject({
        system_prompt: z
          .enum(['client', 'production'])
          .default('client')
          .describe(
            "client: the client's system message is sent as it came; production: it is replaced by the agent's system prompt in the production resource set (prepended when the client sent none)",
          ),
      }),
    )
    .default({})
    .describe("per config agent id (named by X-Agent-Id or an alias's `agent`): what the gateway does to its calls"),
  max_body_bytes: count(1 << 30)
    .default(32 * 1024 * 1024)
    .describe('a larger request body is refused (413)'),
  max_header_bytes: count(1 << 20)
    .default(64 * 1024)
    .describe('the request line and headers together; more is refused (431)'),
  max_headers: count(10_000).default(100).describe('more header lines are refused (431)'),
  max_connections: count(1_000_000)
    .default(1024)
    .describe('connections open at once; more are answered 503 and closed'),
  max_connections_per_client: count(1_000_000)
    .default(512)
    .describe('connections open at once from one client address; more are answered 429 and closed'),
  request_timeout_s: timeoutS(HOUR_S)
    .default(60)
    .describe('a client must send its whole request (headers and body) within this long (408)'),
  write_timeout_s: timeoutS(HOUR_S)
    .default(60)
    .describe('a client that reads nothing of its response for this long is disconnected'),
  holdout: z
    .number()
    .min(0)
    .max(0.9)
    .default(0.1)
    .describe(
      'share of captured sessions (picked by a hash of the rollout id) kept out of training data for evaluation replay',
    ),
});

export const configSchema = z.strictObject({
  $schema: z.string().optional(),
  project: z
    .strictObject({
      name: name.default('massgen-rl'),
      data_dir: filePath().default('.massgen-rl').describe('relative to the config file'),
    })
    .prefault({}),
  store: z
    .strictObject({
      path: filePath().optional().describe('SQLite file (default: <data_dir>/store.sqlite)'),
      url: z
        .string()
        .regex(/^postgres(ql)?:\/\/[^\s]+$/, 'must be a postgres:// URL, e.g. postgres://massgen@db-host:5432/massgen')
        .optional()
        .describe(
          'a PostgreSQL store every machine can reach, instead of the SQLite file; no password in it (see password_env)',
        ),
      password_env: envName
        .default('PGPASSWORD')
        .describe('the environment variable holding the PostgreSQL password; it never reaches logs or the store'),
      busy_timeout_ms: timeoutMs(HOUR_S).default(15_000),
    })
    .prefault({}),
  models: z.record(name, model).prefault(defaultModels),
  prompts: z.record(name, prompt).prefault(defaultPrompts),
  tools: z.record(name, tool).default({}),
  agents: z.array(agent).min(1).prefault(defaultAgents),
  roles: z
    .record(name, role)
    .refine((r) => Object.keys(r).length > 0, 'name at least one role, or leave roles out (one team, trained by train)')
    .optional()
    .describe(
      "heterogeneous teams: named groups of agents (and the presenter, the delegated sub-tasks, the policies), each with its own weights and recipe; each role's datasets come from its own members' calls with rewards attributed to it (docs/roles.md). Absent: one team, trained by train",
    ),
  orchestrator: orchestrator.prefault({}),
  policies: policies.prefault({}),
  tasks: tasks.prefault({}),
  rewards: rewards.prefault({}),
  collect: collect.prefault({}),
  queue: queue.prefault({}),
  train: train.prefault({}),
  eval: evaluation.prefault({}),
  deploy: deploy.prefault({}),
  prompt_opt: promptOpt.prefault({}),
  loop: loop.prefault({}),
  privacy: privacy.prefault({}),
  gateway: gateway.prefault({}),
});

export type RLConfig = z.output<typeof configSchema>;
export type RLConfigInput = z.input<typeof configSchema>;
export type ModelConfig = z.output<typeof model>;
export type AgentConfig = z.output<typeof agent>;
export type PrivacyConfig = RLConfig['privacy'];
export type TrainConfig = RLConfig['train'];
export type Algo = (typeof ALGOS)[number];
export type PolicyKind = (typeof POLICY_KINDS)[number];
export type PolicyAlgorithm = (typeof POLICY_ALGORITHMS)[number];
export type PoliciesConfig = RLConfig['policies'];
export type GatewayConfig = RLConfig['gateway'];
export type RolesConfig = NonNullable<RLConfig['roles']>;
export type RoleConfig = RolesConfig[string];
export type Recipe = NonNullable<RoleConfig['recipe']>;
export type RecipeAlgo = (typeof RECIPES)[number];

/** Where a remote model is served: its base_url, or each replica of base_urls (none for local weights). */
export function remoteUrls(m: Pick<ModelConfig, 'base_url' | 'base_urls'>): string[] {
  return m.base_urls ? [...m.base_urls] : m.base_url ? [m.base_url] : [];
}

/** Whether a model's chat completions are streamed: models.X.stream, else on for the built-in server only. */
export function streamsCompletions(m: Pick<ModelConfig, 'stream' | 'local'>): boolean {
  return m.stream ?? m.local !== undefined;
}

/**
 * The port of a local model's server that others are told about (`massgen-rl serve`, a MassGen export):
 * the --port flag (0 picks a free one), else local.port, else DEFAULT_SERVE_PORT. The servers a run starts
 * for itself keep local.port, where 0 picks a free port.
 */
export function fixedPort(local: Pick<NonNullable<ModelConfig['local']>, 'port'> | undefined, flag?: number): number {
  return flag ?? (local?.port || DEFAULT_SERVE_PORT);
}
