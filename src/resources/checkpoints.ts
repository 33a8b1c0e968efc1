import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../errors.js';
import type { Checkpoint } from '../store/checkpoints.js';
import type { Resource, Store } from '../store/index.js';
import { newId } from '../util/ids.js';

export interface RegisterCheckpointInput {
  /** The trained model or adapter folder (the trainer's done.path). */
  path: string;
  algo: string;
  /** A LoRA adapter (served on top of basePath) rather than a full model. */
  adapter: boolean;
  /** What training started from, as configured (`builtin:…`, `resource:…`, a folder); stored as base_model. */
  baseModel: string;
  /** The weight resource training started from: the base model's, or the parent checkpoint's. */
  baseResourceId?: string | null;
  /** The base model folder, for adapters (default: the parent's base_path, else the base resource's folder). */
  basePath?: string | null;
  /** The weight resource name (default: the parent checkpoint's line, else the base resource's name). */
  name?: string;
  parentId?: string | null;
  trainingRunId?: string | null;
  datasetHash?: string | null;
  traceIds?: string[] | null;
  watermark?: number | null;
  configHash?: string | null;
  metrics?: Record<string, unknown>;
  /** Extra weight resource metadata. */
  metadata?: Record<string, unknown>;
}

export interface RegisteredCheckpoint {
  checkpoint: Checkpoint;
  resource: Resource;
}

/** Records trained weights: the next version of a weight resource and its checkpoint row, in one transaction. */
export function registerCheckpoint(store: Store, input: RegisterCheckpointInput): RegisteredCheckpoint {
  const folder = path.resolve(input.path);
  if (!fs.existsSync(folder)) throw new UserError(`cannot register checkpoint: no folder at ${folder}`);
  return store.transaction(() => {
    const parent = input.parentId ? store.checkpoints.get(input.parentId) : undefined;
    if (input.parentId && !parent)
      throw new UserError(`cannot register checkpoint: no parent checkpoint "${input.parentId}"`);
    const parentRes = parent?.resourceId ? store.resources.get(parent.resourceId) : undefined;
    const baseRes = input.baseResourceId ? store.resources.get(input.baseResourceId) : undefined;
    if (input.baseResourceId && !baseRes)
      throw new UserError(`cannot register checkpoint: no weight resource "${input.baseResourceId}"`);
    const name = input.name ?? parentRes?.name ?? baseRes?.name ?? refName(input.baseModel);
    const basePath = input.basePath ?? (parentRes?.metadata.base_path as string | undefined) ?? baseRes?.path ?? null;
    const id = newId('ck');
    const resource = store.resources.add({
      kind: 'weight',
      name,
      path: folder,
      parentId: parentRes?.id ?? baseRes?.id ?? null,
      metadata: {
        ...input.metadata,
        algo: input.algo,
        adapter: input.adapter,
        base_path: input.adapter ? basePath : null,
        checkpoint_id: id,
      },
    });
    const checkpoint = store.checkpoints.add({
      id,
      resourceId: resource.id,
      parentId: parent?.id ?? null,
      trainingRunId: input.trainingRunId,
      algo: input.algo,
      baseModel: input.baseModel,
      path: folder,
      datasetHash: input.datasetHash,
      traceIds: input.traceIds,
      watermark: input.watermark,
      configHash: input.configHash,
      metrics: input.metrics,
    });
    return { checkpoint, resource };
  });
}

/** A resource name for a base model reference: `builtin:x` and `resource:x@3` → x, a folder → its name. */
export function refName(ref: string): string {
  const bare = ref.replace(/^(builtin|resource):/, '').replace(/@[^@/]*$/, '');
  return path.basename(bare) || 'model';
}

/** A checkpoint by id or unique prefix, or a UserError (exit 2). */
export function resolveCheckpoint(store: Store, ref: string): Checkpoint {
  const found = store.checkpoints.resolve(ref.trim());
  if (!found)
    throw new UserError(`no checkpoint "${ref}" (or the prefix is ambiguous)`, 'see `massgen-rl checkpoints list`');
  return found;
}

export interface CheckpointDetail {
  checkpoint: Checkpoint;
  resource: Resource | null;
  production: boolean;
  /** Parent first, up to the root. */
  lineage: Checkpoint[];
  children: Checkpoint[];
}

export function describeCheckpoint(store: Store, ref: string): CheckpointDetail {
  const checkpoint = resolveCheckpoint(store, ref);
  const resource = (checkpoint.resourceId && store.resources.get(checkpoint.resourceId)) || null;
  const production = Boolean(resource && store.resources.production('weight', resource.name)?.id === resource.id);
  return {
    checkpoint,
    resource,
    production,
    lineage: store.checkpoints.lineage(checkpoint.id),
    children: store.checkpoints.children(checkpoint.id),
  };
}

export type MetricMode = 'max' | 'min';

export interface PruneOptions {
  keepLast: number;
  keepBest?: { metric: string; mode: MetricMode };
  /** Plan only: nothing is deleted. */
  dryRun?: boolean;
  /** Folders are removed only inside this directory (the data dir); others are left and reported. */
  root?: string;
  /** Delete at most these (the plan a user confirmed); anything the fresh plan would add is left. */
  onlyIds?: readonly string[];
}

export interface PrunedCheckpoint {
  id: string;
  path: string;
  weight: string | null;
  filesRemoved: boolean;
  /** Why the folder was left on disk. */
  filesKept?: string;
}

export interface PruneResult {
  dryRun: boolean;
  kept: { id: string; weight: string | null; reasons: string[] }[];
  deleted: PrunedCheckpoint[];
}

/**
 * Keeps the newest keepLast checkpoints, the best one by a metric, production weights and their
 * rollback target, and every ancestor of those; deletes the other rows, then their folders.
 */
export function pruneCheckpoints(store: Store, opts: PruneOptions): PruneResult {
  if (!Number.isInteger(opts.keepLast) || opts.keepLast < 1)
    throw new UserError(`--keep-last ${opts.keepLast}: expected a whole number ≥ 1`);
  const all = store.checkpoints.list();
  const reasons = new Map<string, string[]>();
  const keep = (ck: Checkpoint, why: string) => reasons.set(ck.id, [...(reasons.get(ck.id) ?? []), why]);
  all.slice(0, opts.keepLast).forEach((ck) => keep(ck, `last ${opts.keepLast}`));
  if (opts.keepBest && all.length)
    keep(best(all, opts.keepBest.metric, opts.keepBest.mode), `best ${opts.keepBest.metric} (${opts.keepBest.mode})`);
  const prod = new Set(store.resources.listProduction().map((r) => r.id));
  const shielded = store.checkpoints.protectedResourceIds();
  for (const ck of all) {
    if (ck.resourceId && prod.has(ck.resourceId)) keep(ck, 'production');
    else if (ck.resourceId && shielded.has(ck.resourceId)) keep(ck, 'rollback target');
  }
  for (const id of [...reasons.keys()]) {
    for (const a of store.checkpoints.lineage(id)) keep(a, `ancestor of ${id}`);
  }
  const weight = (ck: Checkpoint) => (ck.resourceName ? `${ck.resourceName} v${ck.resourceVersion}` : null);
  const doomed = all
    .filter((ck) => !reasons.has(ck.id))
    .map((ck) => ({ ck, depth: store.checkpoints.lineage(ck.id).length }))
    .sort((a, b) => b.depth - a.depth); // stable: newest first within a depth
  const result: PruneResult = {
    dryRun: Boolean(opts.dryRun),
    kept: all
      .filter((ck) => reasons.has(ck.id))
      .map((ck) => ({ id: ck.id, weight: weight(ck), reasons: reasons.get(ck.id)! })),
    deleted: [],
  };
  const allowed = opts.onlyIds && new Set(opts.onlyIds);
  for (const { ck } of doomed) {
    if (allowed && !allowed.has(ck.id)) continue;
    const entry: PrunedCheckpoint = { id: ck.id, path: ck.path, weight: weight(ck), filesRemoved: false };
    result.deleted.push(entry);
    if (opts.dryRun) continue;
    store.checkpoints.delete(ck.id);
    const why = store.checkpoints.pathInUse(ck.path)
      ? 'another checkpoint or resource uses it'
      : removeFolder(ck.path, opts.root);
    if (why) entry.filesKept = why;
    else entry.filesRemoved = true;
  }
  return result;
}

function best(all: Checkpoint[], metric: string, mode: MetricMode): Checkpoint {
  const scored = all.filter((ck) => typeof ck.metrics[metric] === 'number' && Number.isFinite(ck.metrics[metric]));
  if (!scored.length) {
    const names = [...new Set(all.flatMap((ck) => Object.keys(ck.metrics)))].sort();
    throw new UserError(
      `--keep-best ${metric}: no checkpoint has a numeric "${metric}" metric`,
      names.length ? `metrics on record: ${names.join(', ')}` : 'no checkpoint has metrics',
    );
  }
  const value = (ck: Checkpoint) => (ck.metrics[metric] as number) * (mode === 'max' ? 1 : -1);
  return scored.reduce((a, b) => (value(b) > value(a) ? b : a)); // newest first: ties keep the newest
}

/** Removes a checkpoint folder; returns why it was left instead, if it was. */
function removeFolder(dir: string, root: string | undefined): string | undefined {
  const abs = path.resolve(dir);
  if (root && (path.relative(path.resolve(root), abs).startsWith('..') || path.resolve(root) === abs))
    return `outside ${root}`;
  if (abs === path.parse(abs).root) return 'refusing to remove a filesystem root';
  try {
    fs.rmSync(abs, { recursive: true, force: true });
    return undefined;
  } catch (err) {
    return `could not remove it: ${(err as Error).message}`;
  }
}

/** Starts a new line from a checkpoint: weight resource NAME v1 on the same files, with a checkpoint whose parent is the original. */
export function forkCheckpoint(store: Store, ref: string, name: string): RegisteredCheckpoint {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(name))
    throw new UserError(`--name "${name}": use letters, digits, ".", "_" and "-" (starting with a letter or digit)`);
  const source = resolveCheckpoint(store, ref);
  if (!fs.existsSync(source.path))
    throw new UserError(`checkpoint ${source.id} has no files at ${source.path} any more`);
  return store.transaction(() => {
    const taken = store.resources.latest('weight', name);
    if (taken)
      throw new UserError(`weight resource "${name}" already exists (v${taken.version}); choose another --name`);
    const sourceRes = source.resourceId ? store.resources.get(source.resourceId) : undefined;
    const { checkpoint_id: _c, pruned_at: _p, ...inherited } = sourceRes?.metadata ?? {};
    const id = newId('ck');
    const resource = store.resources.add({
      kind: 'weight',
      name,
      path: source.path,
      parentId: sourceRes?.id ?? null,
      metadata: { ...inherited, checkpoint_id: id, forked_from: source.id },
    });
    const checkpoint = store.checkpoints.add({
      ...source,
      id,
      resourceId: resource.id,
      parentId: source.id,
      trainingRunId: null,
    });
    return { checkpoint, resource };
  });
}
