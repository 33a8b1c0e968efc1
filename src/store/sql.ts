/**
 * The database as the repositories see it: the synchronous, prepared-statement API of better-sqlite3,
 * implemented for SQLite (sqlite-db.ts) and for PostgreSQL (postgres/pg-db.ts).
 */
export type Dialect = 'sqlite' | 'postgres';

export interface RunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

export interface SqlStatement {
  /** Parameters are positional; an array argument is spread, as better-sqlite3 does. */
  run(...params: unknown[]): RunResult;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  /** Rows as their first column's value. */
  pluck(on?: boolean): this;
  /** Rows as arrays of column values, in select order. */
  raw(on?: boolean): this;
}

/** fn run in a transaction; called inside another transaction it is a savepoint. */
export type Transaction<F extends (...args: never[]) => unknown> = F & {
  /** Takes the store's write lock first, so read-then-write code sees no concurrent writer (SQLite's BEGIN IMMEDIATE). */
  immediate: F;
  deferred: F;
};

export interface SqlDb {
  readonly dialect: Dialect;
  readonly open: boolean;
  /** Where the data lives, for messages: a file path, or a URL without its password. */
  readonly location: string;
  prepare(sql: string): SqlStatement;
  exec(sql: string): void;
  transaction<F extends (...args: never[]) => unknown>(fn: F): Transaction<F>;
  /**
   * fn in a transaction that only appends rows nobody else writes (spans, rewards of one rollout): on
   * PostgreSQL it does not wait for the write lock, so many writers insert side by side.
   */
  append<T>(fn: () => T): T;
  close(): void;
}

/** `head` (`INSERT INTO t (a, b) VALUES `) for n rows of `columns` values at once, each statement prepared once per n. */
export function multiRowInsert(db: SqlDb, head: string, columns: number): (rows: number) => SqlStatement {
  const row = `(${Array(columns).fill('?').join(', ')})`;
  const prepared = new Map<number, SqlStatement>();
  return (rows) => {
    let statement = prepared.get(rows);
    if (!statement) prepared.set(rows, (statement = db.prepare(head + Array(rows).fill(row).join(', '))));
    return statement;
  };
}

/** A top-level JSON field of a TEXT column, as text (numbers as their digits), NULL when absent. */
export function jsonText(db: Pick<SqlDb, 'dialect'>, column: string, key: string): string {
  if (!/^[a-z_]+$/.test(key)) throw new Error(`bad JSON key ${key}`);
  return db.dialect === 'postgres'
    ? `(${column}::jsonb ->> '${key}')`
    : `CAST(json_extract(${column}, '$.${key}') AS TEXT)`;
}

/** True when a top-level JSON field is `true`; absent or anything else is false. */
export function jsonFlag(db: SqlDb, column: string, key: string): string {
  if (!/^[a-z_]+$/.test(key)) throw new Error(`bad JSON key ${key}`);
  return db.dialect === 'postgres'
    ? `COALESCE(${column}::jsonb -> '${key}' = 'true'::jsonb, FALSE)`
    : `COALESCE(json_extract(${column}, '$.${key}'), 0) = 1`;
}

/** `column` with a top-level number field set to the next parameter. */
export function jsonSetNumber(db: SqlDb, column: string, key: string): string {
  if (!/^[a-z_]+$/.test(key)) throw new Error(`bad JSON key ${key}`);
  return db.dialect === 'postgres'
    ? `(${column}::jsonb || jsonb_build_object('${key}', ?::double precision))::text`
    : `json_set(${column}, '$.${key}', ?)`;
}

/** No LIMIT: the largest safe integer, which both dialects take (PostgreSQL refuses SQLite's -1). */
export const NO_LIMIT = Number.MAX_SAFE_INTEGER;

/** Family names (from the config's fixed list) as an SQL list. */
export function sqlFamilies(families: readonly string[]): string {
  for (const f of families) if (!/^[a-z_]+$/.test(f)) throw new Error(`not a reward family name: ${f}`);
  return `(${families.map((f) => `'${f}'`).join(', ')})`;
}

/**
 * A new run's started_at: now, or just after the table's latest when the clock was stepped back since (a run is
 * "the latest" by started_at, and one started after a backward step must still sort after the ones before it).
 */
export function nextStartedAt(db: SqlDb, table: string): number {
  const last = db.prepare(`SELECT started_at FROM ${table} ORDER BY started_at DESC LIMIT 1`).pluck().get() as
    number | string | undefined;
  return Math.max(Date.now(), last === undefined ? 0 : Number(last) + 1);
}
