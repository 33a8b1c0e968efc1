import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.js';
import { LATEST_SCHEMA_VERSION, Store } from '../../src/store/index.js';
import { MIGRATIONS, postgresSql } from '../../src/store/migrations.js';
import { SyncPgConnection } from '../../src/store/postgres/bridge.js';
import { storeDb } from '../../src/store/store.js';
import { FIXTURES, hasStack, runCli, tempDir } from '../helpers.js';
import { PASSWORD_ROLE } from '../support/postgres-server.mjs';
import { freshPostgresUrl } from '../support/postgres.js';
// @ts-expect-error plain ES module

const sql = (url: string, text: string) => {
  const c = new SyncPgConnection({ connectionString: url });
  try {
    return c.query({ sql: text, params: [], array: false }).rows;
  } finally {
    c.close();
  }
};

describe('PostgreSQL store', () => {
  it('records the same numbered migrations as SQLite, in one transaction', () => {
    const url = freshPostgresUrl();
    const store = Store.open({ path: url });
    expect(store.stats()).toMatchObject({ backend: 'postgres', schemaVersion: LATEST_SCHEMA_VERSION });
    expect(storeDb(store).prepare('SELECT version, name FROM schema_migrations ORDER BY version').all()).toEqual(
      MIGRATIONS.map((m) => ({ version: m.version, name: m.name })),
    );
    // The v3 CHECK is in force: a policy resource is accepted, an unknown kind is not.
    store.resources.add({ kind: 'policy', name: 'routing', content: '{}' });
    expect(() =>
      storeDb(store)
        .prepare("INSERT INTO resources (id, kind, name, version, created_at) VALUES ('x', 'other', 'n', 1, 0)")
        .run(),
    ).toThrow(/check constraint/);
    store.close();
  });

  it('upgrades a store of schema v1 in place, keeping its rows', () => {
    const url = freshPostgresUrl();
    const store = Store.open({ path: url });
    store.close();
    // Rebuild it at v1: drop everything, apply migration 1 only, with one rollout.
    sql(url, 'DROP SCHEMA public CASCADE; CREATE SCHEMA public');
    sql(
      url,
      `CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL);
      ${postgresSql(MIGRATIONS[0]!)}
      INSERT INTO schema_migrations VALUES (1, 'initial schema', 0);
      INSERT INTO rollouts (id, source, status, started_at) VALUES ('ro_old', 'collect', 'completed', 1);
      INSERT INTO collect_runs (id, status, started_at) VALUES ('run_z', 'completed', 5), ('run_a', 'completed', 5);`,
    );
    const again = Store.open({ path: url });
    try {
      expect(again.stats().schemaVersion).toBe(LATEST_SCHEMA_VERSION);
      expect(again.rollouts.get('ro_old')).toMatchObject({ status: 'completed', resourceSetId: null });
      // Migration 4 numbers the existing runs in the order they were stored: of two started in one millisecond, the later first.
      expect(again.collectRuns.latest().map((r) => r.id)).toEqual(['run_a', 'run_z']);
      const added = again.collectRuns.start({});
      expect(again.collectRuns.latest(1)[0]!.id).toBe(added);
    } finally {
      again.close();
    }
  });

  it('refuses a store with a newer schema and leaves it untouched', () => {
    const url = freshPostgresUrl();
    Store.open({ path: url }).close();
    sql(url, "INSERT INTO schema_migrations VALUES (99, 'from the future', 0)");
    const tables = () => sql(url, "SELECT COUNT(*)::int AS n FROM pg_tables WHERE schemaname = 'public'");
    const before = tables();
    expect(() => Store.open({ path: url })).toThrow(UserError);
    expect(() => Store.open({ path: url })).toThrow(
      `schema version 99, newer than this massgen-rl supports (${LATEST_SCHEMA_VERSION})`,
    );
    expect(tables()).toEqual(before);
  });

  it('takes the password from store.password_env; it never reaches the output or the store', async () => {
    const admin = freshPostgresUrl();
    const password = 'pw-Zq8-not-in-any-log';
    sql(
      admin,
      `DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${PASSWORD_ROLE}') THEN CREATE ROLE ${PASSWORD_ROLE} LOGIN PASSWORD '${password}'; END IF; END $$`,
    );
    const db = new URL(admin).pathname.slice(1);
    sql(admin, `GRANT ALL ON SCHEMA public TO ${PASSWORD_ROLE}; ALTER DATABASE ${db} OWNER TO ${PASSWORD_ROLE}`);
    const url = new URL(admin);
    url.username = PASSWORD_ROLE;
    const dir = tempDir({ 'massgen-rl.yaml': `store: { url: "${url.toString()}", password_env: MY_PG_PASSWORD }\n` });
    process.env.MY_PG_PASSWORD = password;
    const store = Store.open({ path: url.toString(), passwordEnv: 'MY_PG_PASSWORD' });
    delete process.env.MY_PG_PASSWORD;
    const ok = await runCli(['status', '--json'], { cwd: dir, env: { MY_PG_PASSWORD: password } });
    expect(ok.exitCode, ok.stderr).toBe(0);
    expect(ok.stdout + ok.stderr).not.toContain(password);
    try {
      expect(store.stats().backend).toBe('postgres');
      const dump = (
        storeDb(store).prepare("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").pluck().all() as string[]
      )
        .map((t) => (storeDb(store).prepare(`SELECT t::text FROM ${t} t`).pluck().all() as string[]).join('\n'))
        .join('\n');
      expect(dump).not.toContain(password);
    } finally {
      store.close();
    }
    const wrong = await runCli(['status'], { cwd: dir, env: { MY_PG_PASSWORD: 'wrong' } });
    expect(wrong.exitCode).toBe(2);
    expect(wrong.stderr).toMatch(
      /cannot connect to the store at postgres:\/\/massgen_pw@127\.0\.0\.1:\d+\/\w+.*password authentication failed/,
    );
    expect(hasStack(wrong.stderr)).toBe(false);
    const inUrl = new URL(url.toString());
    inUrl.password = password;
    const refused = await runCli(['status'], {
      cwd: tempDir({ 'massgen-rl.yaml': `store: { url: "${inUrl.toString()}" }\n` }),
    });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toMatch(/store\.url: contains a password; put it in the environment variable PGPASSWORD/);
    expect(refused.stdout + refused.stderr).not.toContain(password);
  });

  it('a role without the CREATE right on the schema is told which right it lacks (exit 2)', async () => {
    const admin = freshPostgresUrl();
    const role = 'massgen_no_create';
    const exists = `SELECT FROM pg_roles WHERE rolname = '${role}'`;
    const create = `IF NOT EXISTS (${exists}) THEN CREATE ROLE ${role} LOGIN; END IF;`;
    sql(admin, `DO $$ BEGIN ${create} END $$`);
    // PostgreSQL 15 and later give PUBLIC no CREATE on schema public; earlier ones did.
    sql(admin, 'REVOKE CREATE ON SCHEMA public FROM PUBLIC');
    const url = new URL(admin);
    url.username = role;
    expect(() => Store.open({ path: url.toString() })).toThrow(UserError);
    const dir = tempDir({ 'massgen-rl.yaml': `store: { url: "${url.toString()}" }\n` });
    for (const args of [['status'], ['traces', 'import', '--massgen-logs', path.join(FIXTURES, 'massgen-logs')]]) {
      const r = await runCli(args, { cwd: dir });
      expect(r.exitCode, `${args[0]}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`role "${role}" lacks the CREATE right on schema public`));
      expect(r.stderr).toMatch(new RegExp(`GRANT CREATE ON SCHEMA public TO ${role}`));
      expect(hasStack(r.stderr)).toBe(false);
    }
    expect(sql(admin, "SELECT COUNT(*)::int AS n FROM pg_tables WHERE schemaname = 'public'")).toEqual([{ n: 0 }]);
  });
});
