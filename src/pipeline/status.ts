import fs from 'node:fs';
import type { LoadedConfig } from '../config/load.js';
import type { Resource, RunRecord, StoreStats } from '../store/index.js';
import { withStore } from './store.js';

export interface StatusReport {
  config: string;
  project: string;
  store: StoreStats | null;
  latest: { collect: RunRecord[]; training: RunRecord[]; loop: RunRecord[] };
  production: Resource[];
}

export async function getStatus(loaded: LoadedConfig): Promise<StatusReport> {
  const base = { config: loaded.file ?? '<embedded defaults>', project: loaded.config.project.name };
  if (!fs.existsSync(loaded.paths.storePath)) {
    return { ...base, store: null, latest: { collect: [], training: [], loop: [] }, production: [] };
  }
  return withStore(loaded, (store) => ({
    ...base,
    store: store.stats(),
    latest: { collect: store.collectRuns.latest(5), training: store.trainingRuns.latest(5), loop: store.loopRuns.latest(5) },
    production: store.resources.listProduction(),
  }));
}
