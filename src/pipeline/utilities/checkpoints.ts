import { UserError } from '../../errors.js';
import { importCheckpoint } from '../../resources/checkpoint-import.js';
import {
  describeCheckpoint,
  forkCheckpoint,
  pruneCheckpoints,
  type CheckpointDetail,
  type MetricMode,
  type PruneResult,
  type RegisteredCheckpoint,
} from '../../resources/checkpoints.js';
import { resolveStart } from '../../resources/training-start.js';
import { resourceRef } from '../../resources/weights.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { Checkpoint } from '../../store/checkpoints.js';

export type { CheckpointDetail, MetricMode, PruneResult } from '../../resources/checkpoints.js';

export interface ListedCheckpoint extends Checkpoint {
  /** Its weights are what production serves. */
  production: boolean;
}

/** Checkpoints, newest first, each marked when it is in production. */
export function listCheckpoints(rt: Runtime, opts: { algo?: string; limit: number }): ListedCheckpoint[] {
  const store = rt.existingStore();
  const prod = new Set(store.resources.listProduction().map((r) => r.id));
  return store.checkpoints
    .list({ algo: opts.algo, limit: opts.limit })
    .map((ck) => ({ ...ck, production: Boolean(ck.resourceId && prod.has(ck.resourceId)) }));
}

export function showCheckpoint(rt: Runtime, ref: string): CheckpointDetail {
  return describeCheckpoint(rt.existingStore(), ref);
}

export interface PruneOptions {
  keepLast: number;
  keepBest?: { metric: string; mode: MetricMode };
  dryRun?: boolean;
  /** Asked with the plan before anything is deleted; false keeps everything. */
  confirm?: (plan: PruneResult) => Promise<boolean>;
}

/**
 * Plans the prune (never production, its rollback target, or an ancestor of a kept checkpoint), asks
 * for confirmation, then deletes exactly the planned rows and their folders inside the data dir.
 */
export async function prune(rt: Runtime, opts: PruneOptions): Promise<PruneResult & { cancelled?: true }> {
  const store = rt.existingStore();
  const rule = { keepLast: opts.keepLast, keepBest: opts.keepBest };
  const plan = pruneCheckpoints(store, { ...rule, dryRun: true });
  if (!plan.deleted.length || opts.dryRun) return plan;
  if (opts.confirm && !(await opts.confirm(plan))) return { ...plan, deleted: [], cancelled: true };
  const result = pruneCheckpoints(store, { ...rule, root: rt.paths.dataDir, onlyIds: plan.deleted.map((d) => d.id) });
  rt.forgetWeights();
  return result;
}

/** Starts a new weight line NAME v1 on a checkpoint's files. */
export function fork(rt: Runtime, ref: string, name: string): RegisteredCheckpoint {
  return forkCheckpoint(rt.existingStore(), ref, name);
}

/** `METRIC`, `METRIC:max` or `METRIC:min`; loss-like metrics default to min. */
export function parseKeepBest(spec: string): { metric: string; mode: MetricMode } {
  const m = /^([A-Za-z0-9_./-]+)(?::(max|min))?$/.exec(spec.trim());
  if (!m) throw new UserError(`--keep-best ${spec}: expected METRIC or METRIC:max or METRIC:min`);
  return {
    metric: m[1]!,
    mode: (m[2] as MetricMode | undefined) ?? (/loss|perplexity|error|kl/i.test(m[1]!) ? 'min' : 'max'),
  };
}

export interface ImportOptions {
  /** What it was trained from: a checkpoint id, builtin:…, resource:NAME@V or a folder (default: production's weights). */
  from?: string;
  /** The algorithm that trained it, as the checkpoint records it (default: imported). */
  algo?: string;
}

/** Weights trained elsewhere, registered as the next checkpoint of what they were trained from. */
export function importWeights(rt: Runtime, folder: string, opts: ImportOptions = {}): RegisteredCheckpoint {
  const store = rt.existingStore();
  const ref = opts.from?.trim() || productionWeights(rt);
  const algo = opts.algo ?? 'imported';
  const weights = (r: string, where?: string) => rt.weights(r, where);
  const start = resolveStart(store, { baseModel: ref, weights }, algo, ref);
  const registered = importCheckpoint(store, {
    folder,
    algo,
    dataDir: rt.paths.dataDir,
    start: {
      ref,
      parentId: start.checkpoint?.id ?? null,
      baseResourceId: start.resource?.id ?? null,
      baseDir: start.adapter ? start.baseDir! : start.dir,
    },
  });
  rt.forgetWeights();
  return registered;
}

/** The one weight line production serves, as `resource:NAME@V`; with several, --from must say which. */
function productionWeights(rt: Runtime): string {
  const lines = rt
    .existingStore()
    .resources.listProduction()
    .filter((r) => r.kind === 'weight');
  if (lines.length === 1) return resourceRef(lines[0]!);
  throw new UserError(
    lines.length
      ? `production serves ${lines.length} weight lines (${lines.map((r) => r.name).join(', ')}): say which one these were trained from`
      : 'production serves no weights yet: say what these were trained from',
    'pass --from CHECKPOINT, --from resource:NAME@V or --from builtin:smollm2-135m-instruct',
  );
}
