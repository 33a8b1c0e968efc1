import { UserError } from '../errors.js';
import type { Db } from './database.js';
import { SqliteDb } from './sqlite-db.js';

/** How long one attempt waits for the lock inside SQLite (which blocks the event loop) before retrying later. */
export const BRIEF_WAIT_MS = 100;

/** Writers retry a locked store for this many busy_timeout_ms before they give up. */
export const PATIENCE_FACTOR = 4;

/** The store stayed locked by another process for longer than writers wait. */
export class StoreBusyError extends UserError {
  override readonly exitCode: number;

  constructor(message: string, hint?: string, exitCode = 2) {
    super(message, hint);
    this.name = 'StoreBusyError';
    this.exitCode = exitCode;
  }
}

/**
 * SQLITE_BUSY (another connection holds the lock) or SQLITE_LOCKED, with their extended codes; on
 * PostgreSQL a lock wait past lock_timeout (55P03), a deadlock (40P01) or a serialization failure (40001).
 */
export function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (
    typeof code === 'string'
    && (/^SQLITE_(BUSY|LOCKED)/.test(code) || code === '55P03' || code === '40P01' || code === '40001')
  );
}

/** fn with SQLite's busy wait cut to a moment: the caller retries later, and the event loop keeps running meanwhile. */
export function briefly<T>(db: Db, fn: () => T): T {
  if (!(db instanceof SqliteDb)) return fn();
  const usual = db.native.pragma('busy_timeout', { simple: true }) as number;
  db.native.pragma(`busy_timeout = ${Math.min(usual, BRIEF_WAIT_MS)}`);
  try {
    return fn();
  } finally {
    db.native.pragma(`busy_timeout = ${usual}`);
  }
}

/** Exponential backoff with jitter: 50 ms doubling up to 2 s. */
export function backoffMs(attempt: number): number {
  return Math.min(2000, 50 * 2 ** attempt) * (0.5 + Math.random() / 2);
}

/**
 * How long a store has refused writes, shared by its writers: once it has refused them for longer than
 * the patience, every writer gives up at once instead of each waiting the whole time again.
 */
export class BusyClock {
  private since: number | undefined;

  constructor(
    readonly file: string,
    readonly patienceMs: number,
  ) {}

  succeeded(): void {
    this.since = undefined;
  }

  /** Records a refused write; throws a StoreBusyError when the store has refused them for too long. */
  refused(now = Date.now()): void {
    this.since ??= now;
    if (now - this.since >= this.patienceMs) throw this.error(now - this.since);
  }

  get lockedForMs(): number {
    return this.since === undefined ? 0 : Date.now() - this.since;
  }

  error(waitedMs = this.lockedForMs, exitCode = 2, more = ''): StoreBusyError {
    return new StoreBusyError(
      `store ${this.file} stayed locked by another process for ${(waitedMs / 1000).toFixed(1)} s${more}`,
      `find what holds it (another massgen-rl command, or a sqlite3 shell with an open transaction) and try again; store.busy_timeout_ms sets how long writers wait (collect retries for ${PATIENCE_FACTOR} × that)`,
      exitCode,
    );
  }
}
