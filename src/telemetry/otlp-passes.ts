import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Store, StoreOptions } from '../store/index.js';
import { exportPending, failedExport as failed, type OtlpExportResult, type OtlpTarget } from './otlp-export.js';
import type { FollowerRequest, FollowerWorkerData } from './otlp-follow-worker.js';

/** Where the continuous export's passes run: one at a time, abortable, closed once. */
export interface Passes {
  readonly thread: 'worker' | 'main';
  run(): Promise<OtlpExportResult>;
  abort(): void;
  close(timeoutMs: number): Promise<void>;
}

/** The compiled worker beside this module; absent when the code runs from its TypeScript sources (the tests). */
export const FOLLOW_WORKER = new URL('./otlp-follow-worker.js', import.meta.url);

/** Passes on the caller's own thread and store connection. */
export function mainThreadPasses(store: Store, target: OtlpTarget): Passes {
  const abort = new AbortController();
  return {
    thread: 'main',
    run: () =>
      exportPending(store, target, { signal: abort.signal }).catch((err: Error) => failed(target, err.message)),
    abort: () => abort.abort(),
    close: async () => undefined,
  };
}

/** Passes on a worker thread with its own connection to the store; it keeps the process alive only while awaited. */
export function workerPasses(storeOptions: Omit<StoreOptions, 'redactor'>, target: OtlpTarget, url: URL): Passes {
  const data: FollowerWorkerData = { store: storeOptions, target };
  const worker = new Worker(url, { workerData: data });
  worker.unref();
  let broken: string | undefined;
  let waiting: ((r: OtlpExportResult) => void) | undefined;
  const settle = (r: OtlpExportResult) => {
    const resolve = waiting;
    waiting = undefined;
    worker.unref();
    resolve?.(r);
  };
  worker.on('message', settle);
  worker.on('error', (err) => {
    broken = `the export thread failed: ${err.message}`;
    settle(failed(target, broken));
  });
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  void exited.then(() => settle(failed(target, broken ?? 'the export thread ended')));
  const send = (m: FollowerRequest) => worker.postMessage(m);
  return {
    thread: 'worker',
    run: () => {
      if (broken) return Promise.resolve(failed(target, broken));
      return new Promise((resolve) => {
        waiting = resolve;
        // held while a pass is awaited: with nothing else left (a command closing), the process would exit first
        worker.ref();
        send({ type: 'pass' });
      });
    },
    abort: () => send({ type: 'abort' }),
    close: async (timeoutMs) => {
      worker.ref();
      send({ type: 'close' });
      const deadline = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), timeoutMs).unref());
      if ((await Promise.race([exited, deadline])) === 'late') await worker.terminate();
    },
  };
}

/** Worker passes where the compiled worker exists and storeOptions are known, else the caller's thread. */
export function passesFor(
  store: Store,
  target: OtlpTarget,
  storeOptions: Omit<StoreOptions, 'redactor'> | undefined,
  url: URL | null = FOLLOW_WORKER,
): Passes {
  const usable = storeOptions && url && fs.existsSync(fileURLToPath(url));
  return usable ? workerPasses(storeOptions, target, url) : mainThreadPasses(store, target);
}
