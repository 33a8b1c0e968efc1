import { LEASE_STALE_MS, leaseName, type Store } from '../../store/index.js';

/**
 * fn under the job's lease: a lock in the store kept fresh by a heartbeat, which other workers read to
 * find dead ones. fn's signal aborts when this worker stops or the lease was taken over; undefined when
 * another worker holds the lease.
 */
export async function underLease<T>(
  store: Store,
  jobId: string,
  signal: AbortSignal,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T | undefined> {
  const taken = store.locks.acquire(leaseName(jobId), LEASE_STALE_MS);
  if (!('lock' in taken)) return undefined;
  const lease = taken.lock;
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  signal.addEventListener('abort', onAbort);
  const beat = setInterval(() => {
    if (!lease.heartbeat()) stop.abort();
  }, 5_000);
  try {
    return await fn(stop.signal);
  } finally {
    clearInterval(beat);
    signal.removeEventListener('abort', onAbort);
    lease.release();
  }
}
