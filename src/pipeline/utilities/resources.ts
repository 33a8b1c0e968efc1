import path from 'node:path';
import { UserError } from '../../errors.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { AuditRecord, Resource, ResourceKind, ResourceSet, Store } from '../../store/index.js';
import { writeMassgen, type MassgenGateway } from '../deploy/massgen-export.js';
import { syncProduction } from '../production-sync.js';

export interface SetRow {
  id: string;
  version: number;
  origin: Record<string, unknown>;
  createdAt: number;
  roles: ('production' | 'canary')[];
}

/** Resource sets, newest first, with the roles they hold. */
export function listSets(rt: Runtime, limit = 50): SetRow[] {
  const store = rt.existingStore();
  const prod = store.sets.pointer('production')?.setId;
  const canary = store.sets.pointer('canary')?.setId;
  return store.sets.list(limit).map((s) => ({
    id: s.id,
    version: s.version,
    origin: s.origin,
    createdAt: s.createdAt,
    roles: [...(s.id === prod ? ['production' as const] : []), ...(s.id === canary ? ['canary' as const] : [])],
  }));
}

/** A resource and what made it, back to the traces: its versions' lineage, checkpoint, training run and dataset. */
export interface ResourceTrace {
  id: string;
  kind: ResourceKind;
  name: string;
  version: number;
  source: string;
  /** Parent first, up to the first version. */
  lineage: { id: string; version: number; source: string }[];
  checkpoint: { id: string; algo: string | null; parent: string | null; datasetHash: string | null } | null;
  trainingRun: { id: string; status: string; algo: unknown; dataset: unknown } | null;
  /** The rollouts the training data came from (collect rollouts numbered from…to). */
  traces: { from: number; to: number; rollouts: number } | null;
}

export interface SetDetail {
  set: {
    id: string;
    version: number;
    origin: Record<string, unknown>;
    createdAt: number;
    roles: ('production' | 'canary')[];
  };
  agents: {
    agent: string;
    prompt: ResourceTrace | null;
    weights: ResourceTrace | null;
    followsConfig: { prompt: boolean; weights: boolean };
  }[];
  /** The set's orchestration policies, by decision (routing, stop, tool, delegate). */
  policies: { decision: string; policy: ResourceTrace | null }[];
  /** The prompt the winner presents with (orchestrator.presenter_prompt); null: its own system prompt. */
  presenter: { prompt: ResourceTrace | null; followsConfig: boolean } | null;
  history: AuditRecord[];
}

/** `production`, `canary`, or a set (`set:N`, `vN`, an rs_ id), traced member by member. */
export function showSet(rt: Runtime, ref = 'production'): SetDetail {
  const store = rt.existingStore();
  const set = findSet(store, ref);
  const roles = listSets(rt, 1000).find((s) => s.id === set.id)?.roles ?? [];
  return {
    set: { id: set.id, version: set.version, origin: set.origin, createdAt: set.createdAt, roles },
    agents: Object.entries(set.members.agents).map(([agent, m]) => ({
      agent,
      prompt: traceResource(store, m.prompt),
      weights: m.weights ? traceResource(store, m.weights) : null,
      followsConfig: m.from_config,
    })),
    policies: Object.entries(set.members.policies ?? {}).map(([decision, id]) => ({
      decision,
      policy: traceResource(store, id),
    })),
    presenter:
      set.members.presenter === undefined
        ? null
        : {
            prompt: traceResource(store, set.members.presenter),
            followsConfig: set.members.presenter_from_config === true,
          },
    history: store.audit.list({ limit: 500 }).filter((a) => a.afterSet === set.id || a.beforeSet === set.id),
  };
}

export function traceResource(store: Store, id: string): ResourceTrace | null {
  const r = store.resources.get(id);
  if (!r) return null;
  const lineage: ResourceTrace['lineage'] = [];
  for (
    let p = r.parentId ? store.resources.get(r.parentId) : undefined;
    p && lineage.length < 100;
    p = p.parentId ? store.resources.get(p.parentId) : undefined
  ) {
    lineage.push({ id: p.id, version: p.version, source: sourceOf(p) });
  }
  const ckId = typeof r.metadata.checkpoint_id === 'string' ? r.metadata.checkpoint_id : null;
  const ck = ckId ? store.checkpoints.get(ckId) : undefined;
  const runId =
    ck?.trainingRunId ?? (typeof r.metadata.training_run_id === 'string' ? r.metadata.training_run_id : null);
  const run = runId ? store.trainingRuns.get(runId) : undefined;
  const wm = (run?.detail.dataset as { watermark?: { from: number; to: number } } | undefined)?.watermark;
  const traces = wm ? { ...wm, rollouts: store.rollouts.countInWindow(wm.from, wm.to) } : null;
  return {
    id: r.id,
    kind: r.kind,
    name: r.name,
    version: r.version,
    source: sourceOf(r),
    lineage,
    checkpoint: ck ? { id: ck.id, algo: ck.algo, parent: ck.parentId, datasetHash: ck.datasetHash } : null,
    trainingRun: run ? { id: run.id, status: run.status, algo: run.detail.algo, dataset: run.detail.dataset } : null,
    traces,
  };
}

function sourceOf(r: Resource): string {
  if (typeof r.metadata.checkpoint_id === 'string')
    return `training (${String(r.metadata.algo ?? '')})`.replace(' ()', '');
  return typeof r.metadata.source === 'string'
    ? r.metadata.source
    : typeof r.metadata.role === 'string'
      ? r.metadata.role
      : 'manual';
}

function findSet(store: Store, ref: string): ResourceSet {
  const role = ref === 'production' || ref === 'canary' ? store.sets.pointer(ref) : undefined;
  if ((ref === 'production' || ref === 'canary') && !role)
    throw new UserError(
      ref === 'production'
        ? 'no production set yet (the first collect, eval or deploy creates it from the config)'
        : 'no canary is running',
    );
  const set = role ? store.sets.get(role.setId) : store.sets.resolve(ref.replace(/^set:/, ''));
  if (!set)
    throw new UserError(`no resource set "${ref}" (or the prefix is ambiguous)`, 'see `massgen-rl resources list`');
  return set;
}

export interface MassgenExportResult {
  file: string;
  set: { id: string; version: number; roles: ('production' | 'canary')[] };
  agents: { id: string; model: string; baseUrl: string }[];
}

/**
 * Writes a set (default production, brought up to date with the config as a deploy would) as a MassGen
 * config to `file` (relative to the cwd), without deploying anything. Production needs no earlier
 * command: like collect's, its first use creates the store and the base set the config implies.
 */
export function exportMassgenConfig(
  rt: Runtime,
  file: string,
  opts: { set?: string; gateway?: MassgenGateway } = {},
): MassgenExportResult {
  const set = !opts.set || opts.set === 'production' ? syncProduction(rt) : findSet(rt.existingStore(), opts.set);
  const { file: written, config } = writeMassgen(rt, set, path.resolve(file), opts.gateway);
  const roles = listSets(rt, 1000).find((s) => s.id === set.id)?.roles ?? [];
  return {
    file: written,
    set: { id: set.id, version: set.version, roles },
    agents: config.agents.map((a) => ({ id: a.id, model: a.backend.model, baseUrl: a.backend.base_url })),
  };
}
