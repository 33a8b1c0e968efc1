import type { Resource, RunRecord, StoreStats } from '../store/index.js';
import type { Runtime } from '../runtime/runtime.js';

export interface StatusReport {
  config: string;
  project: string;
  store: StoreStats | null;
  latest: { collect: RunRecord[]; training: RunRecord[]; loop: RunRecord[] };
  production: Resource[];
}

export function getStatus(rt: Runtime): StatusReport {
  const base = { config: rt.loaded.file ?? '<embedded defaults>', project: rt.config.project.name };
  if (!rt.storeExists()) {
    return { ...base, store: null, latest: { collect: [], training: [], loop: [] }, production: [] };
  }
  const store = rt.existingStore();
  return {
    ...base,
    store: store.stats(),
    latest: { collect: store.collectRuns.latest(5), training: store.trainingRuns.latest(5), loop: store.loopRuns.latest(5) },
    production: store.resources.listProduction(),
  };
}
