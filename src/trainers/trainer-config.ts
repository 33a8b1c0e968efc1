import fs from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import type { TrainConfig } from '../config/schema.js';
import type { DatasetOptionsInput } from '../datasets/options.js';
import type { Algo } from '../datasets/types.js';
import { stableHash } from '../util/hash.js';

export interface TrainerConfigInput {
  train: TrainConfig;
  algo: Algo;
  modelPath: string;
  outputDir: string;
  datasetPath: string;
  /** Train on CPU (no GPU selected or present). */
  cpu: boolean;
  maxSteps?: number;
  resumeFrom?: string | null;
  /** The reward bridge (grpo online). */
  rewardUrl?: string | null;
  baseDir: string;
}

/** The trainer config (docs/trainer-protocol.md, "Trainer config") for one run. */
export function trainerConfig(input: TrainerConfigInput): Record<string, unknown> {
  const t = input.train;
  const file = (f: string | undefined) => (f ? path.resolve(input.baseDir, f) : null);
  const common: Record<string, unknown> = {
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
    resume_from_checkpoint: input.resumeFrom ?? null,
    max_length: t.max_length,
    deepspeed: file(t.deepspeed),
    fsdp: t.fsdp ?? null,
    gradient_checkpointing: t.gradient_checkpointing,
  };
  return { ...common, ...algoKeys(input) };
}

function algoKeys({ train: t, algo, rewardUrl }: TrainerConfigInput): Record<string, unknown> {
  switch (algo) {
    case 'grpo':
      return {
        beta: t.grpo.beta, num_generations: t.grpo.num_generations, mode: t.grpo.mode, reward_url: t.grpo.mode === 'online' ? rewardUrl ?? null : null,
        max_completion_length: t.grpo.max_completion_length, temperature: t.grpo.temperature,
      };
    case 'dpo':
      return { beta: t.dpo.beta };
    case 'ppo':
      return { beta: t.ppo.beta, clip_epsilon: t.ppo.clip_epsilon, max_completion_length: t.ppo.max_completion_length, old_logprobs: t.ppo.old_logprobs };
    case 'sft':
      return {};
  }
}

/** What the run learns with, without where it runs: equal for two runs with the same settings. */
export function trainerConfigHash(cfg: Record<string, unknown>): string {
  const { model_path: _m, output_dir: _o, dataset_path: _d, resume_from_checkpoint: _r, reward_url: _u, ...rest } = cfg;
  return stableHash(rest);
}

export function writeTrainerConfig(file: string, cfg: Record<string, unknown>): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, `# massgen-rl trainer config (docs/trainer-protocol.md)\n${stringify(cfg)}`);
  fs.renameSync(tmp, file);
}

/** The dataset builder options from train.* and rewards.weights. */
export function datasetOptions(train: TrainConfig, weights: Partial<Record<string, number>>): DatasetOptionsInput {
  return {
    sft: { reward_threshold: train.sft.reward_threshold, agents: train.sft.agents ?? null, include_presentation: train.sft.include_presentation },
    grpo: { agents: train.grpo.agents ?? null, min_group_size: train.grpo.min_group_size },
    dpo: { min_margin: train.dpo.min_margin, system_prompt: train.dpo.system_prompt ?? null, max_pairs_per_task: train.dpo.max_pairs_per_task },
    ppo: { credit: train.ppo.credit, gamma: train.ppo.gamma, agents: train.ppo.agents ?? null },
    weights,
  };
}
