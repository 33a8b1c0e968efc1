import { parentPort, workerData } from 'node:worker_threads';
import { Store, type StoreOptions } from '../store/index.js';
import { exportPending, failedExport, type OtlpExportResult, type OtlpTarget } from './otlp-export.js';

/** What the follower sends this thread: a pass, the abort of the pass under way, or the end. */
export type FollowerRequest = { type: 'pass' } | { type: 'abort' } | { type: 'close' };

export interface FollowerWorkerData {
  store: Omit<StoreOptions, 'redactor'>;
  target: OtlpTarget;
}

// The continuous export's passes on their own thread and store connection: reading the rollouts, mapping them to
// spans and the exporter's protobuf encoding (~50 µs a span) then never hold up the run's event loop.
const port = parentPort!;
const { store: storeOptions, target } = workerData as FollowerWorkerData;
const store = Store.open({ ...storeOptions, mustExist: true });
const abort = new AbortController();

async function pass(): Promise<OtlpExportResult> {
  try {
    return await exportPending(store, target, { signal: abort.signal });
  } catch (err) {
    return failedExport(target, (err as Error).message);
  }
}

port.on('message', (m: FollowerRequest) => {
  if (m.type === 'abort') abort.abort();
  else if (m.type === 'pass') void pass().then((result) => port.postMessage(result));
  else {
    store.close();
    port.close();
  }
});
