import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { UserError, errorMessage } from '../../errors.js';
import { openSqlite } from '../database.js';
import { LATEST_SCHEMA_VERSION } from '../migrations.js';
import { connectPostgres, isPostgresUrl, migratePostgres, redactUrl } from '../postgres/open.js';
import type { SqlDb } from '../sql.js';
import { SqliteDb } from '../sqlite-db.js';
import { PROGRESS_TABLE, tableNames } from './schema.js';

export interface TargetOptions {
  /** The environment variable holding a PostgreSQL target's password. */
  passwordEnv?: string;
  busyTimeoutMs?: number;
}

/** Which store a copy comes from: its location and when it was created (its first migration). */
export interface SourceMark {
  location: string;
  createdAt: number;
}

export interface Target {
  db: SqlDb;
  /** It held an unfinished copy of this source, which goes on. */
  resumed: boolean;
}

/**
 * The target, migrated to the latest schema: an empty store (or none yet), or an unfinished copy of
 * this source. Anything else is refused before the target is changed.
 */
export function openTarget(to: string, source: SqlDb, opts: TargetOptions = {}): Target {
  const where = parseTarget(to);
  const mark = sourceMark(source);
  const peek = where.kind === 'postgres' ? connectPostgres(where.url, opts) : peekSqlite(where.file);
  let resumed: boolean;
  try {
    if (peek && identity(peek) === identity(source))
      throw new UserError(`--to ${where.shown} is the configured store itself`, 'copy to another database or file');
    resumed = peek ? inspect(peek, where.shown, mark, tableNames(source)) : false;
  } catch (err) {
    peek?.close();
    throw err;
  }
  let db: SqlDb;
  if (where.kind === 'postgres') {
    db = peek!;
    try {
      migratePostgres(db as Parameters<typeof migratePostgres>[0], false);
    } catch (err) {
      db.close();
      throw err;
    }
  } else {
    peek?.close();
    db = openSqlite(where.file, { busyTimeoutMs: opts.busyTimeoutMs });
  }
  if (!resumed) {
    db.transaction(() => {
      db.exec(`CREATE TABLE ${PROGRESS_TABLE} (name TEXT PRIMARY KEY, value TEXT NOT NULL)`);
      db.prepare(`INSERT INTO ${PROGRESS_TABLE} (name, value) VALUES ('source', ?)`).run(JSON.stringify(mark));
    })();
  }
  return { db, resumed };
}

type Where = { kind: 'postgres'; url: string; shown: string } | { kind: 'sqlite'; file: string; shown: string };

function parseTarget(to: string): Where {
  if (isPostgresUrl(to)) {
    const shown = redactUrl(to);
    let url: URL;
    try {
      url = new URL(to);
    } catch {
      throw new UserError(`--to ${shown} is not a valid URL`, 'e.g. postgres://user@host:5432/massgen');
    }
    if (url.password)
      throw new UserError(
        `--to ${shown} contains a password`,
        'put it in the environment variable named by --password-env (default: store.password_env) instead',
      );
    return { kind: 'postgres', url: to, shown };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(to))
    throw new UserError(`--to ${redactUrl(to)}: expected a postgres:// URL or a SQLite file path`);
  const file = path.resolve(to);
  if (fs.existsSync(file) && fs.statSync(file).isDirectory())
    throw new UserError(`--to ${file} is a directory; name a SQLite file`);
  return { kind: 'sqlite', file, shown: file };
}

/**
 * An existing SQLite file, only read (undefined when there is none yet). Not opened read-only: that
 * would leave a WAL store's -wal and -shm files behind, which the last connection to close removes.
 */
function peekSqlite(file: string): SqliteDb | undefined {
  if (!fs.existsSync(file)) return undefined;
  try {
    const native = new Database(file, { fileMustExist: true });
    const db = new SqliteDb(native, file);
    try {
      tableNames(db);
    } catch (err) {
      db.close();
      throw err;
    }
    return db;
  } catch (err) {
    throw new UserError(
      `--to ${file} is not a SQLite store (${errorMessage(err)}); it was not changed`,
      'name a new file, or an empty store',
    );
  }
}

/** The same database whatever name or URL reaches it: the file's inode, or the server's start time and the database's oid. */
function identity(db: SqlDb): string {
  if (db.dialect === 'sqlite') {
    const s = fs.statSync(db.location);
    return `sqlite:${s.dev}:${s.ino}`;
  }
  return `postgres:${db.prepare("SELECT pg_postmaster_start_time()::text || '/' || (SELECT oid FROM pg_database WHERE datname = current_database())").pluck().get() as string}`;
}

function sourceMark(source: SqlDb): SourceMark {
  const createdAt = source
    .prepare('SELECT applied_at FROM schema_migrations WHERE version = 1')
    .pluck()
    .get() as number;
  return { location: source.location, createdAt };
}

/** True: an unfinished copy of this source; false: empty. Anything else is a UserError. */
function inspect(db: SqlDb, shown: string, mark: SourceMark, ours: string[]): boolean {
  const tables = tableNames(db);
  if (!tables.length) return false;
  const foreign = tables.filter((t) => t !== PROGRESS_TABLE && !ours.includes(t));
  if (foreign.length)
    throw new UserError(
      `--to ${shown} holds tables that are not a massgen-rl store's (${foreign.slice(0, 5).join(', ')}); it was not changed`,
      'copy into an empty database or a new file',
    );
  if (tables.includes('schema_migrations')) {
    const version = db.prepare('SELECT COALESCE(MAX(version), 0) FROM schema_migrations').pluck().get() as number;
    if (version > LATEST_SCHEMA_VERSION) {
      throw new UserError(
        `--to ${shown} has schema version ${version}, newer than this massgen-rl supports (${LATEST_SCHEMA_VERSION}); it was not changed`,
      );
    }
  }
  if (tables.includes(PROGRESS_TABLE)) {
    const raw = db.prepare(`SELECT value FROM ${PROGRESS_TABLE} WHERE name = 'source'`).pluck().get() as
      string | undefined;
    const theirs = raw ? (JSON.parse(raw) as SourceMark) : undefined;
    if (theirs?.location === mark.location && theirs.createdAt === mark.createdAt) return true;
    throw new UserError(
      `--to ${shown} holds an unfinished copy of another store (${theirs?.location ?? 'unknown'}); it was not changed`,
      'copy into an empty database or a new file, or finish that copy from its own config',
    );
  }
  const filled = tables.filter(
    (t) =>
      t !== 'schema_migrations'
      && db
        .prepare(`SELECT EXISTS (SELECT 1 FROM ${quote(t)})`)
        .pluck()
        .get(),
  );
  if (filled.length) {
    throw new UserError(
      `--to ${shown} is not empty: ${filled.join(', ')} ${filled.length === 1 ? 'has' : 'have'} rows; it was not changed`,
      'copy into an empty database or a new file',
    );
  }
  return false;
}

function quote(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
