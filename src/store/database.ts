import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { kindOf, linkTarget } from '../config/input-file.js';
import { UserError, errorMessage } from '../errors.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from './migrations.js';
import type { SqlDb } from './sql.js';
import { SqliteDb } from './sqlite-db.js';

export type Db = SqlDb;

export interface OpenOptions {
  busyTimeoutMs?: number;
  /** Fail instead of creating a new store. */
  mustExist?: boolean;
}

const SQLITE_HEADER = 'SQLite format 3\0';

/** Opens (creating if needed) a store file: checks it is ours, sets pragmas, applies migrations. */
export function openSqlite(file: string, opts: OpenOptions = {}): SqliteDb {
  const exists = checkExistingFile(file);
  if (!exists && opts.mustExist) {
    throw new UserError(`no store at ${file} yet`, 'run `massgen-rl doctor --fix` or `massgen-rl collect` first');
  }
  if (!exists) ensureDir(path.dirname(file));
  let db: Database.Database;
  try {
    db = new Database(file);
  } catch (err) {
    throw new UserError(`cannot open store ${file}: ${errorMessage(err)}`);
  }
  try {
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(opts.busyTimeoutMs ?? 15_000))}`);
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > LATEST_SCHEMA_VERSION) {
      throw new UserError(
        `store ${file} has schema version ${version}, newer than this massgen-rl supports (${LATEST_SCHEMA_VERSION})`,
        'upgrade massgen-rl, or point store.path at another file; the store was not changed',
      );
    }
    toWal(db, opts.busyTimeoutMs ?? 15_000);
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    migrate(db);
    return new SqliteDb(db, file);
  } catch (err) {
    db.close();
    if (err instanceof UserError) throw err;
    const code = (err as { code?: string }).code;
    if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
      throw new UserError(`store ${file} is not a valid SQLite database (${errorMessage(err)}); it was not changed`);
    }
    throw err;
  }
}

/**
 * Switches a store to WAL. SQLite answers this switch with SQLITE_BUSY at once, without its busy wait,
 * while another process opening a new store at the same moment holds a lock: retried until the timeout.
 */
function toWal(db: Database.Database, timeoutMs: number): void {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
}

function migrate(db: Database.Database): void {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
  );
  const pending = () => {
    const applied = new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]);
    return MIGRATIONS.filter((m) => !applied.has(m.version));
  };
  if (!pending().length) return;
  // Foreign keys are off while tables are rebuilt (they cannot be switched inside a transaction) and
  // checked as a whole before the commit, so a migration that breaks a reference rolls back.
  db.pragma('foreign_keys = OFF');
  try {
    // IMMEDIATE takes the write lock first, so two processes opening a new store never both migrate.
    db.transaction(() => {
      for (const m of pending()) {
        db.exec(m.sql);
        db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
          m.version,
          m.name,
          Date.now(),
        );
        db.pragma(`user_version = ${m.version}`);
      }
      const broken = db.pragma('foreign_key_check') as { table: string; parent: string }[];
      if (broken.length)
        throw new Error(
          `migration broke ${broken.length} reference(s), e.g. ${broken[0]!.table} → ${broken[0]!.parent}; the store was not changed`,
        );
    }).immediate();
  } finally {
    db.pragma('foreign_keys = ON');
  }
}

function checkExistingFile(file: string): boolean {
  let fd: number;
  try {
    const stat = fs.statSync(file);
    // SQLite would open a device or FIFO as a database and create its journal next to it (/dev/null-journal).
    if (!stat.isFile()) throw notAFile(file, `${kindOf(stat)}, not a regular file`);
    if (stat.size === 0) return true;
    fd = fs.openSync(file, 'r');
  } catch (err) {
    if (err instanceof UserError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    const target = code === 'ENOENT' ? linkTarget(file) : null;
    if (target !== null) throw notAFile(file, `a link to ${target}, which leads nowhere`);
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw new UserError(`cannot read store ${file}: ${code ?? errorMessage(err)}`);
  }
  try {
    const header = Buffer.alloc(16);
    fs.readSync(fd, header, 0, 16, 0);
    if (header.toString('latin1') !== SQLITE_HEADER) {
      throw new UserError(
        `store ${file} is not a SQLite database; it was not changed`,
        'point store.path at another file or move this one away',
      );
    }
  } finally {
    fs.closeSync(fd);
  }
  return true;
}

function notAFile(file: string, what: string): UserError {
  return new UserError(`store path ${file} is ${what}; store.path must name a file`, 'nothing was opened or created');
}

export function ensureDir(dir: string): void {
  try {
    fs.mkdirSync(dir, { recursive: true });
    fs.accessSync(dir, fs.constants.W_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UserError(
      `data directory ${dir} is not writable (${code ?? errorMessage(err)})`,
      'set project.data_dir or store.path to a writable place',
    );
  }
}
