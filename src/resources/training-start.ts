import fs from 'node:fs';
import type { Algo } from '../config/schema.js';
import { UserError } from '../errors.js';
import type { Checkpoint } from '../store/checkpoints.js';
import type { Resource, Store } from '../store/index.js';
import { refName } from './checkpoints.js';
import type { ResolvedWeights } from './weights.js';

/** What a training run starts from. */
export interface TrainStart {
  /** The reference as configured or given (`builtin:…`, `resource:…`, a folder, a checkpoint id). */
  ref: string;
  /** The trainer's model_path: a full model folder, or the parent LoRA adapter. */
  dir: string;
  adapter: boolean;
  /** The full model beneath an adapter. */
  baseDir: string | null;
  /** The weight resource trained from, when the store knows it. */
  resource: Resource | null;
  /** The parent checkpoint, when the weights came from an earlier training run. */
  checkpoint: Checkpoint | null;
  /** The weight resource line the new checkpoint joins. */
  line: string;
  /** The last training run of this algorithm on this line used rollouts up to this num. */
  watermark: number;
}

export interface StartInput {
  /** train.base_model */
  baseModel: string;
  weights(ref: string, where: string): ResolvedWeights;
}

/**
 * Resolves where training starts. `from` (a checkpoint id or prefix, or a weights reference) wins;
 * otherwise train.base_model names the line, and a `builtin:NAME` line starts from its production
 * version (the base model until a deploy promotes a checkpoint): nightly runs build on what is deployed,
 * whose traces they replay. The watermark is that of the line's last run of the algorithm, so each run
 * learns from the traces collected since.
 */
export function resolveStart(store: Store, start: StartInput, algo: string, from?: string): TrainStart {
  const ref = (from ?? start.baseModel).trim();
  const where = from === undefined ? 'train.base_model' : '--from';
  if (/^ck_[a-z0-9]*$/.test(ref)) {
    const checkpoint = store.checkpoints.resolve(ref);
    if (!checkpoint)
      throw new UserError(
        `${where} ${ref}: no checkpoint with this id (or the prefix is ambiguous)`,
        'see `massgen-rl checkpoints list`',
      );
    return fromCheckpoint(store, ref, checkpoint, algo);
  }
  let weightsRef = ref;
  if (ref.startsWith('builtin:') && from === undefined) {
    const name = ref.slice('builtin:'.length);
    if (store.resources.production('weight', name)) weightsRef = `resource:${name}@production`;
  }
  const w = start.weights(weightsRef, where);
  const resource = w.resource ? (store.resources.get(w.resource.id) ?? null) : findByPath(store, w.dir);
  const ckId = typeof resource?.metadata.checkpoint_id === 'string' ? resource.metadata.checkpoint_id : undefined;
  const parent = ckId ? (store.checkpoints.get(ckId) ?? null) : null;
  if (w.adapter && !w.baseDir) {
    throw new UserError(
      `${where}: ${w.dir} is a LoRA adapter whose base model is not on record`,
      'train from a registered checkpoint (see `massgen-rl checkpoints list`) or from a full model folder',
    );
  }
  const line = resource?.name ?? refName(ref);
  return {
    ref,
    dir: w.dir,
    adapter: w.adapter,
    baseDir: w.adapter ? (w.baseDir ?? null) : null,
    resource,
    checkpoint: parent,
    line,
    watermark: lineWatermark(store, line, algo),
  };
}

function fromCheckpoint(store: Store, ref: string, ck: Checkpoint, algo: string): TrainStart {
  if (!fs.existsSync(ck.path))
    throw new UserError(`--from ${ref}: checkpoint ${ck.id} has no files at ${ck.path} any more`);
  const resource = ck.resourceId ? (store.resources.get(ck.resourceId) ?? null) : null;
  const adapter = fs.existsSync(`${ck.path}/adapter_config.json`);
  const baseDir = adapter && typeof resource?.metadata.base_path === 'string' ? resource.metadata.base_path : null;
  if (adapter && !baseDir)
    throw new UserError(`--from ${ref}: checkpoint ${ck.id} is a LoRA adapter without a recorded base model`);
  const line = resource?.name ?? refName(ck.baseModel ?? ck.path);
  return {
    ref,
    dir: ck.path,
    adapter,
    baseDir,
    resource,
    checkpoint: ck,
    line,
    watermark: lineWatermark(store, line, algo),
  };
}

/**
 * Where a role's line starts: its production weights once it has some, else what train.base_model gives
 * (production's weights of that line when there are some); the run trains, and registers on, the role's line.
 */
export function resolveLineStart(store: Store, start: StartInput, algo: Algo, line: string): TrainStart {
  const own = store.resources.production('weight', line) ? `resource:${line}@production` : start.baseModel;
  const s = resolveStart(store, { ...start, baseModel: own }, algo);
  return s.line === line ? s : { ...s, line, watermark: lineWatermark(store, line, algo) };
}

/** The highest trace watermark among the line's checkpoints of this algorithm. */
function lineWatermark(store: Store, line: string, algo: string): number {
  return store.checkpoints.list({ algo, name: line }).reduce((w, c) => Math.max(w, c.watermark ?? 0), 0);
}

function findByPath(store: Store, dir: string): Resource | null {
  return (
    store.resources
      .list('weight')
      .filter((r) => r.path === dir)
      .at(-1) ?? null
  );
}
