import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml, stringify } from 'yaml';
import type { Algo, TrainConfig } from '../config/schema.js';
import { stableHash } from '../util/hash.js';

/** The keys every bundled trainer reads (docs/trainer-protocol.md, "Trainer config"). */
export interface CommonTrainerConfig {
  model_path: string;
  output_dir: string;
  dataset_path: string;
  lora: { r: number; alpha: number; dropout: number; target_modules: string | string[] } | null;
  learning_rate: number;
  num_train_epochs: number;
  max_steps: number;
  per_device_train_batch_size: number;
  gradient_accumulation_steps: number;
  seed: number;
  use_cpu: boolean;
  bf16: false | null;
  save_steps: number;
  logging_steps: number;
  resume_from_checkpoint: string | null;
  max_length: number;
  deepspeed: string | null;
  fsdp: string | null;
  gradient_checkpointing: boolean;
}

export type SftTrainerConfig = CommonTrainerConfig;
export interface DpoTrainerConfig extends CommonTrainerConfig { beta: number }
/** Truncated importance sampling against the serving/training logprob mismatch (trainers/massgen_rl_trainers/train/tis.py). */
export interface IsCorrectionConfig {
  is_correction: 'auto' | 'on' | 'off';
  is_threshold: number;
  is_cap: number;
}
export interface GrpoTrainerConfig extends CommonTrainerConfig, IsCorrectionConfig {
  beta: number;
  num_generations: number;
  mode: 'offline' | 'online';
  /** The reward bridge's address (online mode), filled in when the run starts. */
  reward_url: string | null;
  max_completion_length: number;
  temperature: number;
  /** Online samples from vLLM (TRL's use_vllm and vllm_* settings); null: the policy's own generate. */
  vllm: VllmTrainerConfig | null;
}
/** train.grpo.vllm as the GRPO trainer reads it (trainers/massgen_rl_trainers/train/vllm.py). */
export interface VllmTrainerConfig {
  mode: 'server' | 'colocate';
  server_base_url: string | null;
  server_host: string;
  server_port: number;
  server_timeout: number;
  group_port: number;
  gpu_memory_utilization: number;
  tensor_parallel_size: number;
  max_model_length: number | null;
}
export interface PpoTrainerConfig extends CommonTrainerConfig, IsCorrectionConfig {
  beta: number;
  clip_epsilon: number;
  max_completion_length: number;
  old_logprobs: 'recompute' | 'recorded';
}

export interface TrainerConfigs { sft: SftTrainerConfig; dpo: DpoTrainerConfig; grpo: GrpoTrainerConfig; ppo: PpoTrainerConfig }
export type TrainerConfig = TrainerConfigs[Algo];

export interface TrainerConfigInput {
  train: TrainConfig;
  modelPath: string;
  outputDir: string;
  datasetPath: string;
  /** Train on CPU (no GPU selected or present). */
  cpu: boolean;
  maxSteps?: number;
  baseDir: string;
}

/** Only the correction's keys of a train.grpo / train.ppo section. */
const mismatch = ({ is_correction, is_threshold, is_cap }: IsCorrectionConfig): IsCorrectionConfig => ({ is_correction, is_threshold, is_cap });

/** The trainer config for one run of `algo`, as a typed object (written once, by writeTrainerConfig). */
export function trainerConfig<A extends Algo>(algo: A, input: TrainerConfigInput): TrainerConfigs[A] {
  const t = input.train;
  const file = (f: string | undefined) => (f ? path.resolve(input.baseDir, f) : null);
  const common: CommonTrainerConfig = {
    model_path: input.modelPath,
    output_dir: input.outputDir,
    dataset_path: input.datasetPath,
    lora: t.lora.enabled ? { r: t.lora.r, alpha: t.lora.alpha, dropout: t.lora.dropout, target_modules: t.lora.target_modules } : null,
    learning_rate: t.learning_rate,
    num_train_epochs: t.epochs,
    max_steps: input.maxSteps ?? t.max_steps ?? -1,
    per_device_train_batch_size: t.batch_size,
    gradient_accumulation_steps: t.gradient_accumulation_steps,
    seed: t.seed,
    use_cpu: input.cpu,
    bf16: input.cpu ? false : null,
    save_steps: t.save_steps,
    logging_steps: t.logging_steps,
    resume_from_checkpoint: null,
    max_length: t.max_length,
    deepspeed: file(t.deepspeed),
    fsdp: t.fsdp ?? null,
    gradient_checkpointing: t.gradient_checkpointing,
  };
  const perAlgo: { [K in Algo]: () => TrainerConfigs[K] } = {
    sft: () => common,
    dpo: () => ({ ...common, beta: t.dpo.beta }),
    grpo: () => ({
      ...common, beta: t.grpo.beta, num_generations: t.grpo.num_generations, mode: t.grpo.mode, reward_url: null,
      max_completion_length: t.grpo.max_completion_length, temperature: t.grpo.temperature, vllm: vllmConfig(t.grpo.vllm),
      ...mismatch(t.grpo),
    }),
    ppo: () => ({
      ...common, beta: t.ppo.beta, clip_epsilon: t.ppo.clip_epsilon, max_completion_length: t.ppo.max_completion_length, old_logprobs: t.ppo.old_logprobs,
      ...mismatch(t.ppo),
    }),
  };
  return perAlgo[algo]();
}

function vllmConfig(v: TrainConfig['grpo']['vllm']): VllmTrainerConfig | null {
  if (!v.enabled) return null;
  return {
    mode: v.mode, server_base_url: v.server_base_url ?? null, server_host: v.server_host, server_port: v.server_port, server_timeout: v.server_timeout_s,
    group_port: v.group_port, gpu_memory_utilization: v.gpu_memory_utilization, tensor_parallel_size: v.tensor_parallel_size, max_model_length: v.max_model_length ?? null,
  };
}

/** Online GRPO scores its samples through the reward bridge. */
export function needsRewardBridge(cfg: TrainerConfig): cfg is GrpoTrainerConfig {
  return 'mode' in cfg && cfg.mode === 'online';
}

/** What the run learns with, without where it runs: equal for two runs with the same settings. */
export function trainerConfigHash(cfg: TrainerConfig): string {
  const { model_path: _m, output_dir: _o, dataset_path: _d, resume_from_checkpoint: _r, ...rest } = cfg;
  const { reward_url: _u, vllm, ...learned } = rest as typeof rest & { reward_url?: unknown; vllm?: VllmTrainerConfig | null };
  if (!vllm) return stableHash(learned); // hashes of runs without vLLM stay as they were
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
