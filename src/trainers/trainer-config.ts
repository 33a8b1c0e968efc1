import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml, stringify } from 'yaml';
import { SELECTION_KEYS, type Algo, type TrainConfig } from '../config/schema.js';
import { stableHash } from '../util/hash.js';

/**
 * What massgen-rl gives each run (docs/trainer-protocol.md, "Trainer config"); the rest of the file is the
 * train.<algo> section's trainer settings as train.check returned them (every one, defaults filled in).
 */
export interface RunKeys {
  model_path: string;
  output_dir: string;
  dataset_path: string;
  lora: { r: number; alpha: number; dropout: number; target_modules: string | string[] } | null;
  use_cpu: boolean;
  /** null: the trainer decides (bf16 where the device computes it natively). */
  bf16: boolean | null;
  resume_from_checkpoint: string | null;
  deepspeed: string | null;
  fsdp: string | null;
  /** grpo: the reward bridge's address (online mode), filled in when the run starts. */
  reward_url?: string | null;
  /** grpo: the generation server's /v1 URL (online mode, generation server), filled in when the run starts. */
  server_url?: string | null;
}

/** A trainer's settings under its own (TRL's) names, as the trainer's dataclass declares them. */
export type TrainerSettings = Record<string, unknown>;
export type TrainerConfig = RunKeys & TrainerSettings;

export interface TrainerConfigInput {
  train: TrainConfig;
  /** The train.<algo> section's settings, checked (checkTrainerSettings). */
  settings: TrainerSettings;
  modelPath: string;
  outputDir: string;
  datasetPath: string;
  /** Train on CPU (no GPU selected or present). */
  cpu: boolean;
  baseDir: string;
}

/** The trainer config for one run of `algo` (written once, by writeTrainerConfig). */
export function trainerConfig(algo: Algo, input: TrainerConfigInput): TrainerConfig {
  const t = input.train;
  const file = (f: string | undefined) => (f ? path.resolve(input.baseDir, f) : null);
  const { enabled, ...lora } = t.lora;
  return {
    ...input.settings,
    model_path: input.modelPath,
    output_dir: input.outputDir,
    dataset_path: input.datasetPath,
    lora: enabled ? lora : null,
    use_cpu: input.cpu,
    bf16: t.bf16 === 'auto' ? null : t.bf16,
    resume_from_checkpoint: null,
    deepspeed: file(t.deepspeed),
    fsdp: t.fsdp ?? null,
    ...(algo === 'grpo' ? { reward_url: null, server_url: null } : {}),
  };
}

/** The section's trainer settings: every key but the data selection the dataset builder reads. */
export function sectionSettings(train: TrainConfig, algo: Algo): TrainerSettings {
  const own = new Set(SELECTION_KEYS[algo]);
  return Object.fromEntries(Object.entries(train[algo]).filter(([key]) => !own.has(key)));
}

/** Online GRPO scores its samples through the reward bridge. */
export function needsRewardBridge(cfg: TrainerConfig): boolean {
  return 'reward_url' in cfg && cfg.mode === 'online';
}

/** What the run learns with, without where it runs: equal for two runs with the same settings. */
export function trainerConfigHash(cfg: TrainerConfig): string {
  const { model_path: _m, output_dir: _o, dataset_path: _d, resume_from_checkpoint: _r, ...rest } = cfg;
  const {
    reward_url: _u,
    server_url: _s,
    vllm,
    ...learned
  } = rest as typeof rest & {
    vllm?: Record<string, unknown> | null;
  };
  if (!vllm) return stableHash(learned);
  const { server_base_url: _b, server_host: _h, server_port: _p, server_timeout: _t, group_port: _g, ...engine } = vllm;
  return stableHash({ ...learned, vllm: engine });
}

export function writeTrainerConfig(file: string, cfg: TrainerConfig): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, `# massgen-rl trainer config (docs/trainer-protocol.md)\n${stringify(cfg)}`);
  fs.renameSync(tmp, file);
}

/** A run's trainer config as written (to resume it). */
export function readTrainerConfig(file: string): TrainerConfig {
  return parseYaml(fs.readFileSync(file, 'utf8')) as TrainerConfig;
}
