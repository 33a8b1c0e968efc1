import type { Runtime } from '../runtime/runtime.js';
import type { Resource, RunRecord, StoreStats } from '../store/index.js';
import { showSet, type SetDetail } from './resources.js';

export interface StatusReport {
  config: string;
  project: string;
  store: StoreStats | null;
  latest: { collect: RunRecord[]; training: RunRecord[]; loop: RunRecord[] };
  production: Resource[];
  /** The production set, agent by agent, each resource traced to what made it (resources show gives the full trace). */
  productionSet: SetDetail | null;
  canary: { version: number; fraction: number | null } | null;
  evaluations: {
    id: string;
    status: string;
    baseline: number | null;
    candidate: number | null;
    passed: boolean | null;
    startedAt: number;
  }[];
}

export function getStatus(rt: Runtime): StatusReport {
  const base = { config: rt.loaded.file ?? '<embedded defaults>', project: rt.config.project.name };
  if (!rt.storeExists()) {
    return {
      ...base,
      store: null,
      latest: { collect: [], training: [], loop: [] },
      production: [],
      productionSet: null,
      canary: null,
      evaluations: [],
    };
  }
  const store = rt.existingStore();
  return {
    ...base,
    store: store.stats(),
    latest: {
      collect: store.collectRuns.latest(5),
      training: store.trainingRuns.latest(5),
      loop: store.loopRuns.latest(5),
    },
    production: store.resources.listProduction(),
    productionSet: store.sets.pointer('production') ? showSet(rt, 'production') : null,
    canary: canaryOf(rt),
    evaluations: store.evaluations.runs({ limit: 5 }).map((e) => {
      const version = (id: string) => store.sets.get(id)?.version ?? null;
      return {
        id: e.id,
        status: e.status,
        baseline: version(e.baselineSet),
        candidate: version(e.candidateSet),
        passed: typeof e.summary?.passed === 'boolean' ? e.summary.passed : null,
        startedAt: e.startedAt,
      };
    }),
  };
}

function canaryOf(rt: Runtime): StatusReport['canary'] {
  const store = rt.existingStore();
  const p = store.sets.pointer('canary');
  const set = p && store.sets.get(p.setId);
  return set ? { version: set.version, fraction: p.fraction } : null;
}
