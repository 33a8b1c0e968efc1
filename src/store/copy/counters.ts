import type { SqlDb } from '../sql.js';
import type { TableInfo } from './schema.js';

/**
 * After rows were copied with their ids, the target's auto-numbering continues past the highest id the
 * source ever handed out, so new rows never collide with copied ones (nor reuse a deleted rollout's
 * number): PostgreSQL's identity sequences, SQLite's AUTOINCREMENT counters. SQLite's plain rowids
 * continue after the largest one by themselves. Idempotent: a resumed copy runs it again.
 */
export function advanceCounters(source: SqlDb, target: SqlDb, tables: readonly TableInfo[]): void {
  const copied = new Set(tables.map((t) => t.name));
  for (const { table, column } of autoNumbered(target).filter((a) => copied.has(a.table))) {
    const n = Math.max(counter(source, table, column), counter(target, table, column));
    if (target.dialect === 'postgres') {
      target.prepare('SELECT setval(pg_get_serial_sequence(?, ?), ?, ?)').get(table, column, Math.max(n, 1), n > 0);
    } else {
      target.prepare('UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = ?').run(n, table);
      target
        .prepare(
          'INSERT INTO sqlite_sequence (name, seq) SELECT ?, ? WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?)',
        )
        .run(table, n, table);
    }
  }
}

/** PostgreSQL's identity columns; SQLite's AUTOINCREMENT keys. */
function autoNumbered(db: SqlDb): { table: string; column: string }[] {
  if (db.dialect === 'postgres') {
    return db
      .prepare(
        `SELECT table_name AS "table", column_name AS "column" FROM information_schema.columns
        WHERE table_schema = current_schema() AND is_identity = 'YES'`,
      )
      .all() as { table: string; column: string }[];
  }
  const tables = db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%AUTOINCREMENT%'")
    .pluck()
    .all() as string[];
  return tables.map((table) => ({
    table,
    column: db.prepare('SELECT name FROM pragma_table_info(?) WHERE pk = 1').pluck().get(table) as string,
  }));
}

/** The highest number handed out for table.column: its largest value, or the sequence's last one if higher. */
function counter(db: SqlDb, table: string, column: string): number {
  const max = db.prepare(`SELECT COALESCE(MAX(${column}), 0) FROM ${table}`).pluck().get() as number;
  const seq =
    db.dialect === 'postgres'
      ? (db
          .prepare('SELECT COALESCE(pg_sequence_last_value(pg_get_serial_sequence(?, ?)::regclass), 0)')
          .pluck()
          .get(table, column) as number | null)
      : hasSqliteSequence(db)
        ? (db.prepare('SELECT seq FROM sqlite_sequence WHERE name = ?').pluck().get(table) as number | undefined)
        : 0;
  return Math.max(max, seq ?? 0);
}

function hasSqliteSequence(db: SqlDb): boolean {
  return Boolean(db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").pluck().get());
}
