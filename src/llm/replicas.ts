/** Milliseconds on some clock; injected so tests can move time. */
export type Clock = () => number;

export interface ReplicaOptions {
  /** Down time after a first failure without Retry-After; doubled per further failure in a row. */
  baseBackoffMs: number;
  maxBackoffMs: number;
  now?: Clock;
}

/** One attempt on a replica: what its result speaks for (the replica's state when it was sent). */
export interface Lease<T> {
  readonly index: number;
  readonly item: T;
  readonly gen: number;
}

export type ReplicaPick<T> = { lease: Lease<T> } | { waitMs: number };

interface Replica {
  outstanding: number;
  /** Clock time before which it gets no traffic; 0: up. */
  downUntil: number;
  /** Failures in a row, for the backoff. */
  failures: number;
  /** Bumped at every change of state: a result of an attempt sent before it is stale. */
  gen: number;
}

/**
 * Endpoints serving the same model. An attempt goes to the up replica with the fewest outstanding
 * attempts (ties in turn). A failed replica is down until its retry-after; then it gets traffic again,
 * and an attempt sent after that which succeeds marks it up (one that fails keeps it down, longer).
 */
export class Replicas<T> {
  private readonly state: Replica[];
  private readonly now: Clock;
  private cursor = 0;

  constructor(
    readonly items: readonly T[],
    private readonly opts: ReplicaOptions,
  ) {
    if (!items.length) throw new Error('no replicas');
    this.state = items.map(() => ({ outstanding: 0, downUntil: 0, failures: 0, gen: 0 }));
    this.now = opts.now ?? Date.now;
  }

  /** A lease on the replica for the next attempt (count it as outstanding until released), or how long until one is back. */
  acquire(): ReplicaPick<T> {
    const now = this.now();
    const n = this.state.length;
    let best = -1;
    let earliest = Infinity;
    for (let k = 0; k < n; k++) {
      const i = (this.cursor + k) % n;
      const r = this.state[i]!;
      if (r.downUntil > now) earliest = Math.min(earliest, r.downUntil);
      else if (best < 0 || r.outstanding < this.state[best]!.outstanding) best = i;
    }
    if (best < 0) return { waitMs: earliest - now };
    this.cursor = (best + 1) % n;
    const r = this.state[best]!;
    r.outstanding++;
    return { lease: { index: best, item: this.items[best]!, gen: r.gen } };
  }

  /** The replica answered: up again, unless the attempt was sent before its last change of state. */
  succeeded(lease: Lease<T>): void {
    const r = this.release(lease);
    if (lease.gen !== r.gen || (r.failures === 0 && r.downUntil === 0)) return;
    r.failures = 0;
    r.downUntil = 0;
    r.gen++;
  }

  /**
   * The replica failed (no connection, timeout, 5xx, 429): down for `retryAfterMs` (its Retry-After) or
   * the backoff. Attempts already under way when it went down do not count again.
   */
  failed(lease: Lease<T>, retryAfterMs?: number): void {
    const r = this.release(lease);
    if (lease.gen !== r.gen) return;
    r.failures++;
    const backoff = Math.min(this.opts.maxBackoffMs, this.opts.baseBackoffMs * 2 ** Math.min(r.failures - 1, 30));
    r.downUntil = this.now() + Math.max(1, retryAfterMs ?? backoff);
    r.gen++;
  }

  /** The attempt ended saying nothing about the replica (a 4xx, a cancellation). */
  released(lease: Lease<T>): void {
    this.release(lease);
  }

  /** Whether a replica gets traffic now, and its attempts under way. */
  status(index: number): { up: boolean; outstanding: number; downForMs: number } {
    const r = this.state[index]!;
    const downForMs = Math.max(0, r.downUntil - this.now());
    return { up: downForMs === 0, outstanding: r.outstanding, downForMs };
  }

  private release(lease: Lease<T>): Replica {
    const r = this.state[lease.index]!;
    r.outstanding--;
    return r;
  }
}
