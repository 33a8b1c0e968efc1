import { UserError, errorMessage } from '../../errors.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS, postgresSql } from '../migrations.js';
import { PgError, SyncPgConnection } from './bridge.js';
import { PgDb, WRITE_LOCK } from './pg-db.js';

export interface PgOpenOptions {
  /** The environment variable holding the password (never in the URL, the config or the store). */
  passwordEnv?: string;
  mustExist?: boolean;
  /** How long a statement may wait for a lock another connection holds. */
  busyTimeoutMs?: number;
}

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url);
}

/** The URL as it may be shown: any password replaced by ***. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
  }
}

/**
 * The URL to connect with, holding the password: pg lets a connection string's (empty) password win over
 * a separate one. It lives only in the connection's memory; everything shown uses redactUrl.
 */
export function withPassword(url: string, password: string | undefined): string {
  if (!password) return url;
  const u = new URL(url);
  u.password = encodeURIComponent(password);
  return u.toString();
}

/** Connects, refuses a newer schema, and applies pending migrations in one transaction under the write lock. */
export function openPostgres(url: string, opts: PgOpenOptions = {}): PgDb {
  const db = connectPostgres(url, opts);
  try {
    migratePostgres(db, opts.mustExist ?? false);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/** A connection only, nothing read or changed yet (a URL with a password is refused). */
export function connectPostgres(url: string, opts: Omit<PgOpenOptions, 'mustExist'> = {}): PgDb {
  const shown = redactUrl(url);
  const parsed = parseUrl(url, shown);
  if (parsed.password)
    throw new UserError(
      `store.url ${shown} contains a password`,
      `put it in the environment variable ${opts.passwordEnv ?? 'PGPASSWORD'} (store.password_env) instead`,
    );
  const password = opts.passwordEnv ? process.env[opts.passwordEnv] : undefined;
  const connectionString = withPassword(url, password);
  const conn = new SyncPgConnection({
    connectionString,
    application_name: 'massgen-rl',
    options: `-c lock_timeout=${Math.max(1, Math.floor(opts.busyTimeoutMs ?? 15_000))} -c TimeZone=UTC`,
  });
  const db = new PgDb(conn, shown, connectionString);
  try {
    db.exec('SELECT 1');
  } catch (err) {
    db.close();
    throw new UserError(
      `cannot connect to the store at ${shown}: ${errorMessage(err)}`,
      'check that PostgreSQL runs there and the user may connect (password from store.password_env)',
    );
  }
  return db;
}

function parseUrl(url: string, shown: string): URL {
  try {
    return new URL(url);
  } catch {
    throw new UserError(`store.url ${shown} is not a valid URL`, 'e.g. postgres://user@host:5432/massgen');
  }
}

/** Refuses a newer schema; applies pending migrations in one transaction under the write lock. */
export function migratePostgres(db: PgDb, mustExist: boolean): void {
  try {
    migrateOrThrow(db, mustExist);
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof PgError ? err.cause : err;
    if (cause instanceof PgError && cause.code === INSUFFICIENT_PRIVILEGE) throw privilegeError(db, cause);
    throw err;
  }
}

/** SQLSTATE 42501: the role lacks a right (on a schema, a table, …). */
const INSUFFICIENT_PRIVILEGE = '42501';

/** Which right the role lacks and how it is granted; the transaction has rolled back, the store is unchanged. */
function privilegeError(db: PgDb, err: PgError): UserError {
  const role = db.prepare('SELECT current_user').pluck().get() as string;
  const schema = /permission denied for schema (\S+)/.exec(err.message)?.[1];
  const table = /permission denied for (?:table|sequence) (\S+)/.exec(err.message)?.[1];
  const right = schema
    ? `the CREATE right on schema ${schema}`
    : table
      ? `the right to read and write ${table} (another role made the store's tables)`
      : 'a right the store needs';
  const grant = schema
    ? `GRANT CREATE ON SCHEMA ${schema} TO ${role}`
    : `GRANT ALL ON ALL TABLES IN SCHEMA public TO ${role}; GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO ${role}`;
  const what = `store ${db.location}: role "${role}" lacks ${right} (${err.message}); the store was not changed`;
  const owner = `make ${role} the owner (ALTER DATABASE … OWNER TO ${role})`;
  return new UserError(what, `as the database's owner: ${grant}; or ${owner}`);
}

function migrateOrThrow(db: PgDb, mustExist: boolean): void {
  const shown = db.location;
  db.transaction(() => {
    // The write lock first: two processes opening a new store never both migrate.
    db.exec(WRITE_LOCK);
    db.exec(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)',
    );
    const applied = new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]);
    const newest = Math.max(0, ...applied);
    if (newest > LATEST_SCHEMA_VERSION) {
      throw new UserError(
        `store ${shown} has schema version ${newest}, newer than this massgen-rl supports (${LATEST_SCHEMA_VERSION})`,
        'upgrade massgen-rl, or point store.url at another database; the store was not changed',
      );
    }
    if (!applied.size && mustExist)
      throw new UserError(`no store at ${shown} yet`, 'run `massgen-rl doctor --fix` or `massgen-rl collect` first');
    for (const m of MIGRATIONS.filter((x) => !applied.has(x.version))) {
      try {
        db.exec(postgresSql(m));
      } catch (err) {
        if (err instanceof PgError) {
          const what =
            `migration ${m.version} (${m.name}) failed on ${shown}: ${err.message}` + '; the store was not changed';
          throw new Error(what, { cause: err });
        }
        throw err;
      }
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        m.version,
        m.name,
        Date.now(),
      );
    }
  })();
}
