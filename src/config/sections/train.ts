import { z } from 'zod';
import { DEFAULT_MODEL_REF } from '../defaults.js';
import { count, hostName, MAX_STEPS, MAX_TASKS, nonNegInt, WEEK_S } from '../fields.js';
import { fileIssues, knownNames, type RuleIssue } from '../rule-issue.js';
import type { ConfigPath } from '../yaml-source.js';
import { ALGOS, selection, trainerSection } from './train-selection.js';

const port = z.int().min(1).max(65535);

export const trainSchema = z.strictObject({
  algo: z.enum(ALGOS).default('grpo'),
  base_model: z.string().default(DEFAULT_MODEL_REF),
  traces: z
    .enum(['since_start', 'all'])
    .default('since_start')
    .describe(
      'since_start: a run learns from the traces recorded after its start weights were trained; all: from every '
        + "stored trace, earlier cycles' replayed beside the new ones (`train --all` for one run)",
    ),
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
      "processes in all, over every machine (accelerate's --num_processes; a multiple of "
        + 'num_machines); > 1 launches the trainer with accelerate (data parallel; CPU processes use gloo)',
    ),
  num_machines: count(1024)
    .default(1)
    .describe(
      "machines training together (accelerate's --num_machines); "
        + 'each runs `massgen-rl train` with its own machine_rank',
    ),
  machine_rank: nonNegInt
    .max(1023)
    .default(0)
    .describe(
      "this machine's rank, 0 to num_machines - 1 (or `train --machine-rank`): 0 is the "
        + 'main machine, which records the run and its checkpoint; the others only train along',
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
      'accelerate config file, e.g. python/accelerate/deepspeed-zero2.yaml, '
        + 'deepspeed-zero3.yaml or fsdp.yaml (default for several CPU processes: cpu-2proc.yaml)',
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
      'bf16 mixed precision (float32 master weights): auto uses it on a CUDA GPU with bf16 and on a CPU '
        + 'that computes bf16 natively (AVX512-BF16 or AMX), about 1.5× faster there; false: float32 throughout',
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

export type TrainConfig = z.output<typeof trainSchema>;

/**
 * A train.sft section (or a role's sft recipe at `at`): its teacher model exists, and its augments need select
 * verified.
 */
export function sftIssues(
  sft: Pick<TrainConfig['sft'], 'teacher' | 'rationalize' | 'select'>,
  at: ConfigPath,
  models: string[],
): RuleIssue[] {
  const issues: RuleIssue[] = [];
  if (sft.teacher && !models.includes(sft.teacher.model))
    issues.push({
      path: [...at, 'teacher', 'model'],
      message: `unknown model "${sft.teacher.model}"; ${knownNames('models', models)}`,
    });
  for (const key of ['rationalize', 'teacher'] as const) {
    const on = key === 'rationalize' ? sft.rationalize?.enabled : sft.teacher;
    if (on && sft.select !== 'verified')
      issues.push({
        path: [...at, key],
        message: `adds rows for tasks no verified completion solved: it needs ${at.join('.')}.select: verified`,
      });
  }
  return issues;
}

/** A train.dpo section (or a role's dpo recipe at `at`): rationalized answers are paired with verified-wrong ones. */
export function dpoIssues(dpo: Pick<TrainConfig['dpo'], 'rationalize' | 'pairs'>, at: ConfigPath): RuleIssue[] {
  if (!dpo.rationalize?.enabled || dpo.pairs === 'correctness') return [];
  return [
    {
      path: [...at, 'rationalize'],
      message: `pairs a rationalized answer with verified-wrong ones: it needs ${at.join('.')}.pairs: correctness`,
    },
  ];
}

/**
 * rewards.references off: the keys of a train section (or a role's recipe) that check answers against the references
 * the loop withholds: rationalize verifies a hinted reply, and a teacher's replies are verified too.
 */
export function withheldReferenceKeys(asks: { rationalize?: { enabled: boolean }; teacher?: unknown }): string[] {
  return [...(asks.rationalize?.enabled ? ['rationalize'] : []), ...(asks.teacher ? ['teacher'] : [])];
}

/** Why such a key is refused (the messages name the key). */
export const WITHHELD = 'checks answers against the references, which rewards.references: off withholds';

/** The trainer files named (its script, deepspeed and accelerate configs) exist. */
export function trainFileIssues(t: TrainConfig, baseDir: string): RuleIssue[] {
  return (['script', 'deepspeed', 'accelerate_config'] as const).flatMap((key) => {
    const file = t[key];
    return file ? fileIssues(baseDir, file, ['train', key]) : [];
  });
}

/** Training over several machines: this machine's rank, where machine 0 listens, how the processes split. */
export function machineIssues(t: TrainConfig): RuleIssue[] {
  const issues: RuleIssue[] = [];
  const n = t.num_machines;
  if (t.machine_rank >= n) {
    issues.push({
      path: ['train', 'machine_rank'],
      message:
        `rank ${t.machine_rank} is out of range: train.num_machines is `
        + `${n}, so a machine's rank is ${n === 1 ? '0' : `0 to ${n - 1}`}`,
    });
  }
  if (n > 1 && !t.main_process_ip) {
    issues.push({
      path: ['train', 'main_process_ip'],
      message: `required with num_machines ${n}: the address of machine 0 that every machine can reach`,
    });
  }
  if (t.num_processes % n) {
    issues.push({
      path: ['train', 'num_processes'],
      message:
        `counts the processes of all ${n} machines together (accelerate's `
        + `--num_processes), so it must be a multiple of ${n}; got ${t.num_processes}`,
    });
  }
  return issues;
}
