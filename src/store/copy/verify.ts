import { createHash } from 'node:crypto';
import type { SqlDb } from '../sql.js';
import { afterKey, copiedColumns, keyOrder, type TableInfo } from './schema.js';

export interface TableCheck {
  table: string;
  sourceRows: number;
  targetRows: number;
  /** sha256 of the rows in copy-key order, each column canonicalized (see encode). */
  sourceHash: string;
  targetHash: string;
  ok: boolean;
}

const PAGE = 1000;

/** Every copied table hashed the same way on both sides: row counts, contents and (for rowid tables) row order. */
export function verifyCopy(source: SqlDb, target: SqlDb, tables: readonly TableInfo[]): TableCheck[] {
  return tables.map((t) => {
    const a = digest(source, t);
    const b = digest(target, t);
    return {
      table: t.name,
      sourceRows: a.rows,
      targetRows: b.rows,
      sourceHash: a.hash,
      targetHash: b.hash,
      ok: a.rows === b.rows && a.hash === b.hash,
    };
  });
}

/** Rows read in key order, page by page; the rowid orders them but is not hashed (PostgreSQL's is a column, SQLite's is not). */
export function digest(db: SqlDb, t: TableInfo): { rows: number; hash: string } {
  const cols = copiedColumns(t);
  const keyAt = t.key.map((k) => cols.indexOf(k));
  const skip = t.rowid ? 1 : 0;
  const first = db.prepare(`SELECT ${cols.join(', ')} FROM ${t.name} ORDER BY ${keyOrder(db, t)} LIMIT ?`).raw();
  const next = db
    .prepare(`SELECT ${cols.join(', ')} FROM ${t.name} WHERE ${afterKey(db, t)} ORDER BY ${keyOrder(db, t)} LIMIT ?`)
    .raw();
  const hash = createHash('sha256');
  let rows = 0;
  let after: unknown[] | undefined;
  for (;;) {
    const page = (after ? next.all(...after, PAGE) : first.all(PAGE)) as unknown[][];
    for (const row of page) {
      for (let i = skip; i < row.length; i++) hash.update(encode(row[i]));
      hash.update('\n');
    }
    rows += page.length;
    if (page.length < PAGE) break;
    const last = page[page.length - 1]!;
    after = keyAt.map((i) => last[i]);
  }
  return { rows, hash: hash.digest('hex') };
}

/**
 * One value as both backends give it: a number by its shortest round-trip digits (an INTEGER 3 and a
 * REAL 3.0 are the same JS number), text length-prefixed, so that no two rows encode alike.
 */
export function encode(v: unknown): string {
  if (v === null || v === undefined) return 'N|';
  if (typeof v === 'number' || typeof v === 'bigint') return `n${v}|`;
  if (typeof v === 'string') return `s${v.length}:${v}|`;
  if (typeof v === 'boolean') return `n${v ? 1 : 0}|`;
  if (Buffer.isBuffer(v)) return `b${v.toString('hex')}|`;
  throw new Error(`cannot compare a stored value of type ${typeof v}`);
}
