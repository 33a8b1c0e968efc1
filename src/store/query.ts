import type { Db } from './database.js';
import type { SqlStatement } from './sql.js';

/** A query with one `IN (?)` list, prepared once per list length (a full page and a last, shorter one). */
export function inListQuery(db: Db, sql: string, raw: boolean): (ids: string[]) => unknown[] {
  const prepared = new Map<number, SqlStatement>();
  return (ids) => {
    let stmt = prepared.get(ids.length);
    if (!stmt) {
      stmt = db.prepare(sql.replace('IN (?)', `IN (${ids.map(() => '?').join(',')})`)).raw(raw);
      prepared.set(ids.length, stmt);
    }
    return stmt.all(...ids);
  };
}

export function groupBy<T>(rows: T[], key: (row: T) => string): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const row of rows) {
    const k = key(row);
    const list = map.get(k);
    if (list) list.push(row);
    else map.set(k, [row]);
  }
  return map;
}
