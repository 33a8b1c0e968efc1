import type Database from 'better-sqlite3';
import { timedStoreWrite } from '../util/profile-counters.js';
import type { SqlDb, SqlStatement, Transaction } from './sql.js';

/** better-sqlite3 behind the store's SqlDb interface; `native` is for the SQLite-only parts (pragmas, migrations). */
export class SqliteDb implements SqlDb {
  readonly dialect = 'sqlite' as const;
  private readonly appendTx: { immediate(fn: () => unknown): unknown };

  constructor(
    readonly native: Database.Database,
    readonly location: string,
  ) {
    this.appendTx = native.transaction((fn: () => unknown) => fn());
  }

  get open(): boolean {
    return this.native.open;
  }

  prepare(sql: string): SqlStatement {
    return this.native.prepare(sql) as unknown as SqlStatement;
  }

  exec(sql: string): void {
    this.native.exec(sql);
  }

  transaction<F extends (...args: never[]) => unknown>(fn: F): Transaction<F> {
    const tx = this.native.transaction(fn as unknown as (...args: unknown[]) => unknown);
    const timed =
      (run: (...args: unknown[]) => unknown) =>
      (...args: unknown[]) =>
        timedStoreWrite(() => run(...args));
    return Object.assign(timed(tx), {
      immediate: timed(tx.immediate),
      deferred: timed(tx.deferred),
    }) as unknown as Transaction<F>;
  }

  append<T>(fn: () => T): T {
    return timedStoreWrite(() => this.appendTx.immediate(fn) as T);
  }

  close(): void {
    if (this.native.open) this.native.close();
  }
}
