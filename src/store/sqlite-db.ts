import type Database from 'better-sqlite3';
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
    return this.native.transaction(fn as unknown as (...args: unknown[]) => unknown) as unknown as Transaction<F>;
  }

  append<T>(fn: () => T): T {
    return this.appendTx.immediate(fn) as T;
  }

  close(): void {
    if (this.native.open) this.native.close();
  }
}
