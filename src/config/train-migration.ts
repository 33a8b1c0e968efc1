import { ALGOS } from './schema.js';

/**
 * Keys of `train` that were the trainers' settings under names of their own: each is now a key of every
 * train.<algo> section, under the trainer's (TRL's) name.
 */
const MOVED: Record<string, string> = {
  epochs: 'num_train_epochs',
  batch_size: 'per_device_train_batch_size',
  max_steps: 'max_steps',
  learning_rate: 'learning_rate',
  gradient_accumulation_steps: 'gradient_accumulation_steps',
  max_length: 'max_length',
  seed: 'seed',
  save_steps: 'save_steps',
  logging_steps: 'logging_steps',
  gradient_checkpointing: 'gradient_checkpointing',
};

type Raw = Record<string, unknown>;
const isMap = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Rewrites the old spellings of trainer settings in a raw config, in place, and says what moved where: a
 * key of train.<algo> already set wins over the old one. Old train.grpo.vllm ({enabled, server_timeout_s,
 * …}) becomes the trainer's vllm mapping (absent when not enabled, server_timeout).
 */
export function migrateTrainKeys(raw: Raw): string[] {
  const train = raw.train;
  if (!isMap(train)) return [];
  const notes: string[] = [];
  for (const [old, key] of Object.entries(MOVED)) {
    if (!Object.hasOwn(train, old)) continue;
    const value = train[old];
    delete train[old];
    for (const algo of ALGOS) {
      const section = isMap(train[algo]) ? train[algo] : (train[algo] ??= {});
      if (isMap(section) && !Object.hasOwn(section, key)) section[key] = value;
    }
    notes.push(
      `train.${old} is deprecated: use train.<algo>.${key} (${ALGOS.map((a) => `train.${a}.${key}`).join(', ')})`,
    );
  }
  const grpo = train.grpo;
  if (isMap(grpo) && isMap(grpo.vllm) && ('enabled' in grpo.vllm || 'server_timeout_s' in grpo.vllm)) {
    const { enabled, server_timeout_s: timeout, ...rest } = grpo.vllm;
    if (enabled === true) grpo.vllm = { ...rest, ...(timeout === undefined ? {} : { server_timeout: timeout }) };
    else delete grpo.vllm;
    if (enabled !== undefined)
      notes.push('train.grpo.vllm.enabled is deprecated: vLLM is on when train.grpo.vllm is set (null or absent: off)');
    if (timeout !== undefined)
      notes.push('train.grpo.vllm.server_timeout_s is deprecated: use train.grpo.vllm.server_timeout');
  }
  return notes;
}

/** A --set key of an old spelling, as the key it now is (`train.epochs` → `train.<algo>.num_train_epochs` for every algo). */
export function migrateOverride(spec: string): string[] {
  const eq = spec.indexOf('=');
  const key = spec.slice(0, eq);
  const m = /^train\.([a-z_]+)$/.exec(key);
  const moved = m && Object.hasOwn(MOVED, m[1]!) ? MOVED[m[1]!] : undefined;
  if (eq <= 0 || moved === undefined) return [spec];
  return ALGOS.map((algo) => `train.${algo}.${moved}${spec.slice(eq)}`);
}
