import { createHash } from 'node:crypto';
import { timedStoreWrite } from '../../util/profile-counters.js';
import type { RunResult, SqlDb, SqlStatement, Transaction } from '../sql.js';
import type { SyncPgConnection } from './bridge.js';

/** The advisory lock that `.immediate` transactions take: one writer at a time, as SQLite's write lock. */
export const WRITE_LOCK = 'SELECT pg_advisory_xact_lock(7125361298)';

/**
 * `?` and `@name` placeholders as `$1, $2, …` (skipping quoted strings and identifiers), with the names
 * in order for binding an object.
 */
export function numberPlaceholders(sql: string): { text: string; names: string[] } {
  const names: string[] = [];
  let n = 0;
  const text = sql.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|\?|@([a-z_][a-z0-9_]*)/gi, (m, name: string | undefined) => {
    if (m === '?') return `$${++n}`;
    if (!name) return m;
    const at = names.indexOf(name);
    if (at >= 0) return `$${at + 1}`;
    names.push(name);
    return `$${++n}`;
  });
  return { text, names };
}

/** Parameters as better-sqlite3 takes them: one array argument is the whole list, one object binds @names. */
function bind(params: unknown[], names: string[]): unknown[] {
  const [first] = params;
  if (params.length === 1 && Array.isArray(first)) return first;
  if (names.length && params.length === 1 && first && typeof first === 'object') {
    return names.map((k) => (first as Record<string, unknown>)[k] ?? null);
  }
  return params;
}

class PgStatement implements SqlStatement {
  private mode: 'object' | 'pluck' | 'raw' = 'object';
  private readonly text: string;
  private readonly names: string[];
  private readonly name: string;

  constructor(
    private readonly db: PgDb,
    sql: string,
  ) {
    ({ text: this.text, names: this.names } = numberPlaceholders(sql));
    this.name = `s${createHash('sha1').update(this.text).digest('hex').slice(0, 16)}`;
  }

  run(...params: unknown[]): RunResult {
    const res = this.db.query(this.text, bind(params, this.names), false, this.name);
    // PostgreSQL has no rowid: an INSERT … RETURNING id gives the new row's id.
    const id = (res.rows[0] as { id?: unknown } | undefined)?.id;
    return { changes: res.rowCount, lastInsertRowid: typeof id === 'number' ? id : 0 };
  }

  get(...params: unknown[]): unknown {
    return this.all(...params)[0];
  }

  all(...params: unknown[]): unknown[] {
    const res = this.db.query(this.text, bind(params, this.names), this.mode !== 'object', this.name);
    return this.mode === 'pluck' ? res.rows.map((r) => (r as unknown[])[0]) : res.rows;
  }

  pluck(on = true): this {
    this.mode = on ? 'pluck' : 'object';
    return this;
  }

  raw(on = true): this {
    this.mode = on ? 'raw' : 'object';
    return this;
  }
}

/** PostgreSQL behind the store's SqlDb interface, on one synchronous connection. */
export class PgDb implements SqlDb {
  readonly dialect = 'postgres' as const;
  private depth = 0;
  private savepoints = 0;
  private isOpen = true;

  /** How other clients (the job queue) connect: the URL with its password, kept out of sight (a # field is never printed). */
  readonly #connectionString: string;

  constructor(
    private readonly conn: SyncPgConnection,
    readonly location: string,
    connectionString: string,
  ) {
    this.#connectionString = connectionString;
  }

  connectionString(): string {
    return this.#connectionString;
  }

  get open(): boolean {
    return this.isOpen;
  }

  query(text: string, params: unknown[], array: boolean, name?: string) {
    return this.conn.query({ sql: text, params, array, ...(name ? { name } : {}) });
  }

  prepare(sql: string): SqlStatement {
    return new PgStatement(this, sql);
  }

  exec(sql: string): void {
    this.conn.query({ sql, params: [], array: false });
  }

  transaction<F extends (...args: never[]) => unknown>(fn: F): Transaction<F> {
    const run = (lock: boolean) =>
      ((...args: Parameters<F>) => timedStoreWrite(() => this.within(lock, () => fn(...args)))) as unknown as F;
    return Object.assign(run(false), { immediate: run(true), deferred: run(false) }) as Transaction<F>;
  }

  append<T>(fn: () => T): T {
    return timedStoreWrite(() => this.within(false, fn));
  }

  close(): void {
    if (!this.isOpen) return;
    this.isOpen = false;
    this.conn.close();
  }

  /** fn in a transaction, or in a savepoint when one is open; rolled back when fn throws. */
  private within<T>(lock: boolean, fn: () => T): T {
    if (this.depth > 0) {
      const sp = `sp${++this.savepoints}`;
      this.exec(`SAVEPOINT ${sp}`);
      this.depth++;
      try {
        const result = fn();
        this.exec(`RELEASE SAVEPOINT ${sp}`);
        return result;
      } catch (err) {
        this.exec(`ROLLBACK TO SAVEPOINT ${sp}`);
        throw err;
      } finally {
        this.depth--;
      }
    }
    this.exec('BEGIN');
    this.depth = 1;
    try {
      if (lock) this.exec(WRITE_LOCK);
      const result = fn();
      this.exec('COMMIT');
      return result;
    } catch (err) {
      try {
        this.exec('ROLLBACK');
      } catch {
        // The connection is gone; the server rolls the transaction back itself.
      }
      throw err;
    } finally {
      this.depth = 0;
    }
  }
}
