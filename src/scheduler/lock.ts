import { GateError } from '../errors.js';
import type { Lock, LockHolder, Store } from '../store/index.js';

export const CYCLE_LOCK = 'loop-cycle';

export interface HeldLock {
  /** Aborted when another process took the lock over (this one's heartbeat went stale). */
  lost: AbortSignal;
  tookOverFrom?: LockHolder;
  release(): void;
}

/**
 * The cross-process lock that keeps two cycles from running at once. A lock whose holder died on this
 * host, or whose heartbeat is older than staleMs (another host), is taken over; a live one is a GateError.
 */
export function acquireCycleLock(
  store: Store,
  staleMs: number,
  heartbeatMs = Math.min(30_000, Math.max(1000, staleMs / 4)),
): HeldLock {
  const got = store.locks.acquire(CYCLE_LOCK, staleMs);
  if ('held' in got) {
    const h = got.held;
    throw new GateError(
      `another cycle is running: process ${h.pid} on ${h.host}, since ${new Date(h.acquiredAt).toISOString()} (last heartbeat ${new Date(h.heartbeatAt).toISOString()})`,
      'wait for it to finish; a lock whose process died is taken over automatically',
    );
  }
  const lock: Lock = got.lock;
  const lost = new AbortController();
  const timer = setInterval(() => {
    try {
      if (!lock.heartbeat()) lost.abort(new Error('the cycle lock was taken over by another process'));
    } catch {
      // A busy store delays a heartbeat; the next one retries well within staleMs.
    }
  }, heartbeatMs);
  timer.unref();
  return {
    lost: lost.signal,
    tookOverFrom: got.tookOverFrom,
    release: () => {
      clearInterval(timer);
      try {
        lock.release();
      } catch {
        // A full disk or a locked store: the row stays, and the next acquire (this process or a later one) takes
        // it over; an error here would hide the one that ended the cycle.
      }
    },
  };
}
