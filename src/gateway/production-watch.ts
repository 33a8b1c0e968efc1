import type { ResourceSet, Store } from '../store/index.js';

/** How often the production pointer is read: a deploy reaches new requests within this long. */
export const PRODUCTION_POLL_MS = 500;

/**
 * The production resource set as the gateway's requests see it: read once at start, then the pointer
 * is polled off the request path (a deploy may run in another process, or on another host sharing a
 * PostgreSQL store), so a request reads memory only. The set itself is read again only when the
 * pointer moved.
 */
export class ProductionWatch {
  private set: ResourceSet | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: Store,
    pollMs = PRODUCTION_POLL_MS,
    private readonly onError?: (err: unknown) => void,
  ) {
    this.refresh();
    this.timer = setInterval(() => this.poll(), pollMs);
    this.timer.unref();
  }

  /** The production set (undefined while the store has none). */
  current(): ResourceSet | undefined {
    return this.set;
  }

  /** Reads the pointer now; the set again when it moved. */
  refresh(): void {
    const id = this.store.sets.pointer('production')?.setId;
    if (id === this.set?.id) return;
    this.set = id === undefined ? undefined : this.store.sets.get(id);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private poll(): void {
    try {
      this.refresh();
    } catch (err) {
      // a store that failed one read keeps the last set; the next poll tries again
      this.onError?.(err);
    }
  }
}
