import { setImmediate as yieldToEvents } from 'node:timers/promises';
import { errorMessage, InterruptedError } from '../../errors.js';
import { multiRowInsert, type SqlDb } from '../sql.js';
import { storeDb, type Store } from '../store.js';
import { advanceCounters } from './counters.js';
import { afterKey, copiedColumns, keyOrder, PROGRESS_TABLE, tablesOf, type TableInfo } from './schema.js';
import { openTarget, type TargetOptions } from './target.js';
import { verifyCopy, type TableCheck } from './verify.js';

export interface CopyOptions extends TargetOptions {
  /** Rows per committed batch. */
  batchSize?: number;
  signal?: AbortSignal;
  /** After each committed batch. */
  onProgress?: (p: CopyProgress) => void;
}

export interface CopyProgress {
  table: string;
  /** Rows of this table in the target now. */
  copied: number;
  total: number;
}

export interface CopyResult {
  source: string;
  target: string;
  schemaVersion: number;
  /** The target held an unfinished copy of this source, and rows it already had were kept. */
  resumed: boolean;
  /** Rows found already copied by an earlier run, and rows this run copied. */
  kept: number;
  copied: number;
  tables: TableCheck[];
  /** Every table has the same rows on both sides. */
  ok: boolean;
}

interface TableProgress {
  /** The copy key of the last copied row. */
  after: unknown[] | null;
  rows: number;
  done: boolean;
}

/** Most parameters in one statement: under SQLite's 32766 (PostgreSQL takes 65535). */
const MAX_PARAMS = 32_000;

/**
 * Copies every table of the store into the target (`to`: a postgres:// URL or a SQLite file) in copy-key
 * order, batch by batch; each batch commits together with the target's progress row, so a copy stopped
 * at any point (Ctrl-C, kill -9) goes on after its last committed batch when run again, and no row is
 * written twice. The source is read in one snapshot; then counts and hashes of both sides are compared.
 */
export async function copyStore(store: Store, to: string, opts: CopyOptions = {}): Promise<CopyResult> {
  const source = storeDb(store);
  const batchSize = opts.batchSize ?? 500;
  const { db: target, resumed } = openTarget(to, source, opts);
  try {
    beginSnapshot(source);
    try {
      const tables = tablesOf(source);
      sameSchema(tables, tablesOf(target), target.location);
      const progress = readProgress(target);
      const kept = [...progress.values()].reduce((n, p) => n + p.rows, 0);
      let copied = 0;
      for (const t of tables) copied += await copyTable(source, target, t, progress.get(t.name), batchSize, opts);
      advanceCounters(source, target, tables);
      const checks = verifyCopy(source, target, tables);
      const ok = checks.every((c) => c.ok);
      if (ok) target.exec(`DROP TABLE ${PROGRESS_TABLE}`);
      const schemaVersion = target.prepare('SELECT MAX(version) FROM schema_migrations').pluck().get() as number;
      return {
        source: source.location,
        target: target.location,
        schemaVersion,
        resumed,
        kept,
        copied,
        tables: checks,
        ok,
      };
    } finally {
      endSnapshot(source);
    }
  } finally {
    target.close();
  }
}

async function copyTable(
  source: SqlDb,
  target: SqlDb,
  t: TableInfo,
  state: TableProgress | undefined,
  batchSize: number,
  opts: CopyOptions,
): Promise<number> {
  if (state?.done) return 0;
  const total = source.prepare(`SELECT COUNT(*) FROM ${t.name}`).pluck().get() as number;
  const cols = copiedColumns(t);
  const keyAt = t.key.map((k) => cols.indexOf(k));
  const first = source
    .prepare(`SELECT ${cols.join(', ')} FROM ${t.name} ORDER BY ${keyOrder(source, t)} LIMIT ?`)
    .raw();
  const next = source
    .prepare(
      `SELECT ${cols.join(', ')} FROM ${t.name} WHERE ${afterKey(source, t)} ORDER BY ${keyOrder(source, t)} LIMIT ?`,
    )
    .raw();
  const read = (p: TableProgress) => (p.after ? next.all(...p.after, batchSize) : first.all(batchSize)) as unknown[][];
  const insert = inserter(target, t, cols);
  const save = target.prepare(
    `INSERT INTO ${PROGRESS_TABLE} (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
  );
  // Reads and writes one batch; returns the progress after it (done once a batch comes back short).
  const step = (p: TableProgress): TableProgress => {
    const rows = read(p);
    insert(rows);
    const last = rows[rows.length - 1];
    const after = last ? keyAt.map((i) => last[i]) : p.after;
    const now = { after, rows: p.rows + rows.length, done: rows.length < batchSize };
    save.run(`table:${t.name}`, JSON.stringify(now));
    return now;
  };
  const batch = target.transaction((p: TableProgress, whole: boolean) => {
    deferReferences(target);
    let now = step(p);
    while (whole && !now.done) now = step(now);
    return now;
  });
  let p: TableProgress = state ?? { after: null, rows: 0, done: false };
  const before = p.rows;
  while (!p.done) {
    // A table that references itself goes in one transaction: its rows may come before their parents.
    try {
      p = batch(p, t.selfRef);
    } catch (err) {
      throw new Error(
        `copying table ${t.name} (rows after key ${JSON.stringify(p.after)}) to ${target.location} failed: ${errorMessage(err)}; what was copied before is kept`,
        { cause: err },
      );
    }
    opts.onProgress?.({ table: t.name, copied: p.rows, total });
    await yieldToEvents();
    if (opts.signal?.aborted && !p.done)
      throw new InterruptedError(
        `copy interrupted in table ${t.name} (${p.rows} of ${total} rows); run it again to go on from there`,
      );
  }
  return p.rows - before;
}

/** Multi-row INSERTs, one statement per chunk that fits the parameter limit; rowids kept (PostgreSQL's are GENERATED ALWAYS). */
function inserter(db: SqlDb, t: TableInfo, cols: string[]): (rows: unknown[][]) => void {
  const perStatement = Math.max(1, Math.floor(MAX_PARAMS / cols.length));
  const overriding = db.dialect === 'postgres' && t.rowid ? ' OVERRIDING SYSTEM VALUE' : '';
  const statement = multiRowInsert(db, `INSERT INTO ${t.name} (${cols.join(', ')})${overriding} VALUES `, cols.length);
  return (rows) => {
    for (let i = 0; i < rows.length; i += perStatement) {
      const chunk = rows.slice(i, i + perStatement);
      statement(chunk.length).run(chunk.flat());
    }
  };
}

/** References are checked at commit, not per row. */
function deferReferences(db: SqlDb): void {
  db.exec(db.dialect === 'postgres' ? 'SET CONSTRAINTS ALL DEFERRED' : 'PRAGMA defer_foreign_keys = ON');
}

function readProgress(db: SqlDb): Map<string, TableProgress> {
  const rows = db.prepare(`SELECT name, value FROM ${PROGRESS_TABLE} WHERE name LIKE 'table:%'`).all() as {
    name: string;
    value: string;
  }[];
  return new Map(rows.map((r) => [r.name.slice('table:'.length), JSON.parse(r.value) as TableProgress]));
}

function sameSchema(source: TableInfo[], target: TableInfo[], where: string): void {
  const shape = (ts: TableInfo[]) =>
    ts
      .map((t) => `${t.name}(${[...t.columns].sort().join(',')})`)
      .sort()
      .join(' ');
  if (shape(source) !== shape(target))
    throw new Error(
      `the target ${where} has other tables or columns than the source at the same schema version:\n  source ${shape(source)}\n  target ${shape(target)}`,
    );
}

/** One consistent view of the source for the whole run, whatever other processes write meanwhile. */
function beginSnapshot(db: SqlDb): void {
  db.exec(db.dialect === 'postgres' ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' : 'BEGIN');
}

function endSnapshot(db: SqlDb): void {
  try {
    db.exec('ROLLBACK');
  } catch {
    // Nothing was written; a connection that is gone has no snapshot left either.
  }
}
