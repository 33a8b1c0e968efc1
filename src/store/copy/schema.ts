import { ROWID_TABLES } from '../migrations.js';
import type { SqlDb } from '../sql.js';

/** Where a copy in progress keeps its place, in the target; dropped once the copy is verified. */
export const PROGRESS_TABLE = 'store_copy_progress';
/** Tables that are not copied: each store keeps its own record of the migrations applied to it. */
const NOT_COPIED = new Set(['schema_migrations', PROGRESS_TABLE]);

export interface TableInfo {
  name: string;
  /** The columns both backends have, in the source's order (PostgreSQL's extra `rowid` left out). */
  columns: string[];
  /** What rows are copied and hashed in order of: the primary key, or `rowid` for ROWID_TABLES. */
  key: string[];
  /** Per key column: text, ordered bytewise on both backends. */
  textKey: boolean[];
  /** The rowid travels with the row, so the target keeps the source's row order. */
  rowid: boolean;
  /** References its own table: copied in one transaction, so a row may come before its parent. */
  selfRef: boolean;
}

/** The store's tables, each after the tables it references. */
export function tablesOf(db: SqlDb): TableInfo[] {
  const names = tableNames(db).filter((t) => !NOT_COPIED.has(t));
  const infos = new Map(names.map((t) => [t, describe(db, t)] as const));
  const refs = new Map(names.map((t) => [t, referencedBy(db, t)] as const));
  const ordered: TableInfo[] = [];
  const visit = (t: string, path: string[]) => {
    if (ordered.some((i) => i.name === t) || !infos.has(t)) return;
    if (path.includes(t)) throw new Error(`tables reference each other in a cycle: ${[...path, t].join(' → ')}`);
    for (const parent of refs.get(t)!) if (parent !== t) visit(parent, [...path, t]);
    ordered.push({ ...infos.get(t)!, selfRef: refs.get(t)!.includes(t) });
  };
  for (const t of [...names].sort()) visit(t, []);
  return ordered;
}

/** Every table of the store's schema (SQLite's own left out). */
export function tableNames(db: SqlDb): string[] {
  const sql =
    db.dialect === 'postgres'
      ? "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
      : "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'";
  return (db.prepare(sql).pluck().all() as string[]).sort();
}

function describe(db: SqlDb, table: string): Omit<TableInfo, 'selfRef'> {
  const cols = columnsOf(db, table);
  const rowid = ROWID_TABLES.includes(table);
  const columns = cols.filter((c) => !(rowid && c.name === 'rowid')).map((c) => c.name);
  const key = rowid
    ? ['rowid']
    : cols
        .filter((c) => c.pk > 0)
        .sort((a, b) => a.pk - b.pk)
        .map((c) => c.name);
  if (!key.length) throw new Error(`table ${table} has no primary key to copy it in order of`);
  const textKey = key.map((k) => /text|char/i.test(cols.find((c) => c.name === k)?.type ?? ''));
  return { name: table, columns, key, textKey, rowid };
}

function columnsOf(db: SqlDb, table: string): { name: string; type: string; pk: number }[] {
  if (db.dialect === 'sqlite')
    return db.prepare('SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid').all(table) as {
      name: string;
      type: string;
      pk: number;
    }[];
  return db
    .prepare(
      `SELECT c.column_name AS name, c.data_type AS type, COALESCE(k.ordinal_position, 0) AS pk
    FROM information_schema.columns c
    LEFT JOIN information_schema.table_constraints p ON p.table_schema = c.table_schema AND p.table_name = c.table_name AND p.constraint_type = 'PRIMARY KEY'
    LEFT JOIN information_schema.key_column_usage k ON k.constraint_schema = p.constraint_schema AND k.constraint_name = p.constraint_name AND k.column_name = c.column_name
    WHERE c.table_schema = current_schema() AND c.table_name = ? ORDER BY c.ordinal_position`,
    )
    .all(table) as { name: string; type: string; pk: number }[];
}

function referencedBy(db: SqlDb, table: string): string[] {
  const sql =
    db.dialect === 'postgres'
      ? `SELECT DISTINCT p.relname FROM pg_constraint k JOIN pg_class p ON p.oid = k.confrelid
        WHERE k.contype = 'f' AND k.conrelid = to_regclass(quote_ident(?))`
      : 'SELECT DISTINCT "table" FROM pragma_foreign_key_list(?)';
  return db.prepare(sql).pluck().all(table) as string[];
}

/** `ORDER BY` of the copy key: bytewise on PostgreSQL too (SQLite's BINARY), so both backends agree. */
export function keyOrder(db: SqlDb, t: TableInfo): string {
  return keyColumns(db, t).join(', ');
}

/** Rows after the given key values (one `?` per key column). */
export function afterKey(db: SqlDb, t: TableInfo): string {
  const cols = keyColumns(db, t);
  return cols.length === 1 ? `${cols[0]} > ?` : `(${cols.join(', ')}) > (${cols.map(() => '?').join(', ')})`;
}

function keyColumns(db: SqlDb, t: TableInfo): string[] {
  return t.key.map((k, i) => (db.dialect === 'postgres' && t.textKey[i] ? `${k} COLLATE "C"` : k));
}

/** The columns read and written: the rowid first where it travels with the row. */
export function copiedColumns(t: TableInfo): string[] {
  return t.rowid ? ['rowid', ...t.columns] : t.columns;
}
