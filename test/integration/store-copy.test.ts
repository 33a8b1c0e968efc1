import Database from 'better-sqlite3';
import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/index.js';
import { SyncPgConnection } from '../../src/store/postgres/bridge.js';
import { storeDb } from '../../src/store/store.js';
import { BIN, FIXTURES, hasStack, runCli, sha, tempDir } from '../helpers.js';
import { freshPostgresUrl } from '../support/postgres.js';
import { buildReportStore, type ReportStore } from '../support/report-store.js';

/** The tables the store orders by SQLite's rowid: their order must survive the copy, not only their rows. */
const ROWID_ORDERED = ['tasks', 'checkpoints'];
const NOT_DATA = ['schema_migrations', 'store_copy_progress'];

/** A store read with a plain connection of its own (no migration, no orphan recovery): rows as arrays. */
function reader(location: string): { all(sql: string): unknown[][]; close(): void } {
  if (location.startsWith('postgres://')) {
    const conn = new SyncPgConnection({ connectionString: location });
    return {
      all: (sql) => conn.query({ sql, params: [], array: true }).rows as unknown[][],
      close: () => conn.close(),
    };
  }
  const db = new Database(location, { readonly: true, fileMustExist: true });
  return { all: (sql) => db.prepare(sql).raw().all() as unknown[][], close: () => db.close() };
}

/** Every data table's rows, as JSON, sorted (in rowid order for the rowid-ordered tables); columns by name. */
function contents(location: string): Record<string, string[]> {
  const db = reader(location);
  try {
    const pg = location.startsWith('postgres://');
    const tables = db
      .all(
        pg
          ? 'SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()'
          : "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
      )
      .map((r) => r[0] as string)
      .filter((t) => !NOT_DATA.includes(t))
      .sort();
    return Object.fromEntries(
      tables.map((t) => {
        const cols = db
          .all(
            pg
              ? `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = '${t}'`
              : `SELECT name FROM pragma_table_info('${t}')`,
          )
          .map((r) => r[0] as string)
          .filter((c) => c !== 'rowid')
          .sort();
        const ordered = ROWID_ORDERED.includes(t);
        const rows = db
          .all(`SELECT ${cols.join(', ')} FROM ${t}${ordered ? ' ORDER BY rowid' : ''}`)
          .map((r) => JSON.stringify(r));
        return [t, ordered ? rows : rows.sort()];
      }),
    );
  } finally {
    db.close();
  }
}

function count(location: string, table: string): number {
  const db = reader(location);
  try {
    return Number(db.all(`SELECT COUNT(*) FROM ${table}`)[0]![0]);
  } finally {
    db.close();
  }
}

/** The copy's progress rows in a target (none once a copy is verified). */
function progressOf(location: string): Record<string, { rows: number; done: boolean }> {
  const db = reader(location);
  try {
    return Object.fromEntries(
      db
        .all("SELECT name, value FROM store_copy_progress WHERE name LIKE 'table:%'")
        .map((r) => [String(r[0]).slice(6), JSON.parse(String(r[1]))]),
    );
  } finally {
    db.close();
  }
}

/**
 * More content next to what a collect, an evaluation, training and a deploy wrote: doubles at the edges
 * of what both backends store, the largest safe integer, text of every kind, a checkpoint line, a lock,
 * enough spans for many batches, and a deleted rollout (the number counter is past the largest num).
 */
function enrich(location: string, rollouts: number): void {
  const store = Store.open({ path: location });
  try {
    const odd = store.rollouts.start({ source: 'collect', metadata: { note: 'ünïcødé 😀 "quoted" \\ back\nslash' } });
    store.spans.append(odd, [
      { type: 'prompt', name: "it's", startedAt: 0.1 + 0.2, durationMs: 1 / 3, payload: { s: 'x\ny\t\u0001' } },
    ]);
    store.rewards.add(
      odd,
      [0.1 + 0.2, 1 / 3, 5e-324, 1.7976931348623157e308, -2.5, 0, 1e21].map((value, i) => ({
        channel: 'rollout',
        family: `f${i}`,
        value,
      })),
    );
    store.rollouts.finish(odd, {
      status: 'completed',
      tokens: Number.MAX_SAFE_INTEGER,
      wallMs: 12.5,
      totalReward: -0.000001,
      finalAnswer: '',
    });
    const first = store.checkpoints.add({ path: '/weights/a', algo: 'sft', metrics: { loss: 0.5 }, traceIds: [odd] });
    store.checkpoints.add({ path: '/weights/b', parentId: first.id, watermark: 3 });
    store.locks.acquire('copy-test', 60_000);
    store.otlpExports.acknowledge('http://collector:4318/v1/traces', [{ rolloutId: odd, spans: 2 }]);
    for (let i = 0; i < rollouts; i++) {
      const id = store.rollouts.start({ source: 'bulk', metadata: { i } });
      store.spans.append(
        id,
        Array.from({ length: 20 }, (_, s) => ({
          type: 'message' as const,
          name: `m${s}`,
          agent: `agent${s % 3}`,
          startedAt: 1_700_000_000_000 + i * 20 + s + 0.25,
          payload: { i, s, text: 'y'.repeat(s * 7) },
        })),
      );
      store.rewards.add(id, [{ channel: 'team', family: 'exact', value: i % 2 }]);
      store.rollouts.finish(id, { status: i % 5 ? 'completed' : 'failed', tokens: i, wallMs: i / 7 });
    }
    const evalRun = store.evaluations.runs({ limit: 1 })[0]!;
    store.evaluations.addItem({
      evalRunId: evalRun.id,
      idx: 0,
      kind: 'judge',
      rolloutId: odd,
      spanSeq: 1,
      seed: 1,
      taskId: null,
      score: 0.5,
      baselineValue: null,
      candidateValue: null,
      agreed: false,
      detail: { verdicts: { candidate_first: 'A', baseline_first: 'A' } },
    });
    store.curriculum.addResults([
      { rolloutId: odd, suite: 'arithmetic', level: 0, category: 'arithmetic/add', success: true },
    ]);
    store.curriculum.setLevel({ suite: 'arithmetic', fromLevel: 0, level: 1, reason: '20/20 correct', detail: {} });
    const gone = store.rollouts.start({ source: 'deleted' });
    storeDb(store).prepare('DELETE FROM rollouts WHERE id = ?').run(gone);
  } finally {
    store.close();
  }
}

const maxOf = (location: string, table: string, column: string) => {
  const db = reader(location);
  try {
    return Number(db.all(`SELECT MAX(${column}) FROM ${table}`)[0]![0]);
  } finally {
    db.close();
  }
};

let sqliteSource: ReportStore;
let pgSource: ReportStore;
let pgSourceUrl: string;
beforeAll(async () => {
  sqliteSource = await buildReportStore();
  enrich(sqliteSource.loaded.paths.storePath, 120);
  pgSourceUrl = freshPostgresUrl();
  pgSource = await buildReportStore({ storeUrl: pgSourceUrl });
  enrich(pgSourceUrl, 120);
});
afterAll(async () => {
  await sqliteSource?.close();
  await pgSource?.close();
});

const copyCli = (project: ReportStore, args: string[]) =>
  runCli(['store', 'copy', ...args], { cwd: project.dir, timeoutMs: 120_000 });

describe('store copy: SQLite → PostgreSQL', () => {
  it('copies every row, verifies it, and the copy then serves as the store', async () => {
    const source = sqliteSource.loaded.paths.storePath;
    const target = freshPostgresUrl();
    const r = await copyCli(sqliteSource, ['--to', target, '--batch-size', '97', '--json']);
    expect(r.stderr).not.toMatch(/error/);
    expect(r.exitCode).toBe(0);
    const out = JSON.parse(r.stdout) as {
      ok: boolean;
      resumed: boolean;
      copied: number;
      tables: { table: string; sourceRows: number; targetRows: number; ok: boolean }[];
    };
    expect(out).toMatchObject({ ok: true, resumed: false });
    const expected = contents(source);
    expect(Object.keys(expected)).toHaveLength(23);
    expect(out.tables.map((t) => t.table).sort()).toEqual(Object.keys(expected));
    for (const t of out.tables)
      expect(t, t.table).toMatchObject({
        ok: true,
        sourceRows: expected[t.table]!.length,
        targetRows: expected[t.table]!.length,
      });
    expect(out.copied).toBe(Object.values(expected).reduce((n, rows) => n + rows.length, 0));
    expect(expected.spans!.length).toBeGreaterThan(2400);
    expect(contents(target)).toEqual(expected);
    // The verified copy keeps no progress table.
    expect(reader(target).all("SELECT to_regclass('store_copy_progress') IS NULL")[0]![0]).toBe(true);

    // The copy is a working store: the CLI reads the same rollouts and counts from it.
    const onTarget = ['--set', `store.url=${target}`];
    const [listSource, listTarget] = await Promise.all([
      runCli(['traces', 'list', '--json', '--limit', '1000'], { cwd: sqliteSource.dir }),
      runCli(['traces', 'list', '--json', '--limit', '1000', ...onTarget], { cwd: sqliteSource.dir }),
    ]);
    expect(listTarget.exitCode).toBe(0);
    expect(JSON.parse(listTarget.stdout)).toEqual(JSON.parse(listSource.stdout));
    const status = await runCli(['status', '--json', ...onTarget], { cwd: sqliteSource.dir });
    expect(JSON.parse(status.stdout).store).toMatchObject({
      backend: 'postgres',
      counts: { rollouts: expected.rollouts!.length, spans: expected.spans!.length },
    });

    // New rows take ids after the copied ones (and after the deleted rollout's number).
    const sourceStore = Store.open({ path: source });
    const deletedNum = Number(
      storeDb(sourceStore).prepare("SELECT seq FROM sqlite_sequence WHERE name = 'rollouts'").pluck().get(),
    );
    const tasksBefore = sourceStore.tasks.list().map((t) => t.id);
    sourceStore.close();
    expect(deletedNum).toBeGreaterThan(maxOf(source, 'rollouts', 'num'));
    const store = Store.open({ path: target });
    try {
      expect(store.tasks.list().map((t) => t.id)).toEqual(tasksBefore);
      const id = store.rollouts.start({ source: 'after-copy' });
      expect(store.rollouts.get(id)!.num).toBe(deletedNum + 1);
      store.rewards.add(id, [{ channel: 'team', family: 'exact', value: 1 }]);
      expect(maxOf(target, 'rewards', 'id')).toBe(maxOf(source, 'rewards', 'id') + 1);
      expect(store.audit.add({ action: 'deploy', trigger: 'cli', beforeSet: null, afterSet: null })).toBe(
        maxOf(source, 'audit', 'id') + 1,
      );
      store.tasks.upsertMany([
        {
          id: 'added-after-copy',
          source: 'test',
          prompt: 'p',
          reference: null,
          category: null,
          split: 'train',
          metadata: {},
        },
      ]);
      expect(store.tasks.list().map((t) => t.id)).toEqual([...tasksBefore, 'added-after-copy']);
      const ck = store.checkpoints.add({ path: '/weights/c' });
      expect(store.checkpoints.list()[0]!.id).toBe(ck.id);
    } finally {
      store.close();
    }
  });
});

describe('store copy: PostgreSQL → SQLite', () => {
  it('copies a store PostgreSQL numbered itself; the file then serves as the store', async () => {
    const file = path.join(tempDir(), 'copy.sqlite');
    const r = await copyCli(pgSource, ['--to', file]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('✓ verified: every table has the same rows on both sides');
    expect(r.stdout).toMatch(/│ spans\s+│ (\d{4})\s+│ \1\s+│ ([0-9a-f]{12})\s+│ \2\s+│ ✓/);
    const expected = contents(pgSourceUrl);
    expect(contents(file)).toEqual(expected);
    expect(expected.rewards!.length).toBeGreaterThan(120);

    const yaml = fs
      .readFileSync(path.join(pgSource.dir, 'massgen-rl.yaml'), 'utf8')
      .replace(/^store: .*$/m, `store: { path: "${file}" }`);
    fs.writeFileSync(path.join(pgSource.dir, 'on-copy.yaml'), yaml);
    const onTarget = ['-c', 'on-copy.yaml'];
    const [listSource, listTarget] = await Promise.all([
      runCli(['traces', 'list', '--json', '--limit', '1000'], { cwd: pgSource.dir }),
      runCli(['traces', 'list', '--json', '--limit', '1000', ...onTarget], { cwd: pgSource.dir }),
    ]);
    expect(listTarget.stderr).toBe('');
    expect(JSON.parse(listTarget.stdout)).toEqual(JSON.parse(listSource.stdout));

    const deletedNum = Number(
      reader(pgSourceUrl).all("SELECT last_value FROM pg_sequences WHERE sequencename LIKE 'rollouts_num%'")[0]![0],
    );
    expect(deletedNum).toBeGreaterThan(maxOf(pgSourceUrl, 'rollouts', 'num'));
    const store = Store.open({ path: file });
    try {
      const id = store.rollouts.start({ source: 'after-copy' });
      expect(store.rollouts.get(id)!.num).toBe(deletedNum + 1);
      store.rewards.add(id, [{ channel: 'team', family: 'exact', value: 1 }]);
      expect(maxOf(file, 'rewards', 'id')).toBe(maxOf(pgSourceUrl, 'rewards', 'id') + 1);
    } finally {
      store.close();
    }
  });
});

describe('store copy: resumable', () => {
  it('goes on after kill -9 from its last committed batch and copies each row once', async () => {
    const file = path.join(tempDir(), 'copy.sqlite');
    const killed = await execa(
      process.execPath,
      [path.join(FIXTURES, 'store-copy-killed.mjs'), pgSourceUrl, file, '50', '30'],
      { reject: false },
    );
    expect(killed.signal).toBe('SIGKILL');
    const progress = progressOf(file);
    const partial = Object.entries(progress);
    expect(partial.some(([, p]) => p.done)).toBe(true);
    // What the target holds is exactly what its progress rows say: no batch half-written.
    for (const [table, p] of partial) expect(count(file, table), table).toBe(p.rows);
    const kept = partial.reduce((n, [, p]) => n + p.rows, 0);
    const total = Object.values(contents(pgSourceUrl)).reduce((n, rows) => n + rows.length, 0);
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(total);

    const r = await copyCli(pgSource, ['--to', file, '--json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, resumed: true, kept, copied: total - kept });
    expect(contents(file)).toEqual(contents(pgSourceUrl));
  });

  it.each(['SIGINT', 'SIGKILL'] as const)('goes on after the CLI is stopped by %s part way through', async (signal) => {
    const target = freshPostgresUrl();
    const child = execa(process.execPath, [BIN, 'store', 'copy', '--to', target, '--batch-size', '1'], {
      cwd: sqliteSource.dir,
      reject: false,
      env: { NO_COLOR: '1' },
    });
    const seen = new SyncPgConnection({ connectionString: target });
    let spansCopied = 0;
    try {
      while (child.exitCode === null && spansCopied === 0) {
        await new Promise((r) => setTimeout(r, 20));
        try {
          const row = seen.query({
            sql: "SELECT value FROM store_copy_progress WHERE name = 'table:spans'",
            params: [],
            array: false,
          }).rows[0] as { value: string } | undefined;
          spansCopied = row ? (JSON.parse(row.value) as { rows: number }).rows : 0;
        } catch {
          // The progress table is not there yet.
        }
      }
    } finally {
      seen.close();
    }
    child.kill(signal);
    const ended = await child;
    if (signal === 'SIGKILL') {
      expect(ended.signal, `the copy ended (${ended.exitCode}) before it could be killed`).toBe('SIGKILL');
    } else {
      expect(ended.exitCode).toBe(130);
      expect(ended.stderr).toMatch(
        /copy interrupted in table spans \(\d+ of \d+ rows\); run it again to go on from there/,
      );
      expect(hasStack(String(ended.stderr))).toBe(false);
    }
    // Whatever the moment, the target holds exactly the rows its progress rows count.
    for (const [table, p] of Object.entries(progressOf(target))) expect(count(target, table), table).toBe(p.rows);

    const r = await copyCli(sqliteSource, ['--to', target]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/resumed: \d+ row\(s\) were copied by an earlier run/);
    expect(contents(target)).toEqual(contents(sqliteSource.loaded.paths.storePath));
  });

  it('a target changed between runs fails verification: exit 1 naming the table', async () => {
    const file = path.join(tempDir(), 'copy.sqlite');
    const killed = await execa(
      process.execPath,
      [path.join(FIXTURES, 'store-copy-killed.mjs'), sqliteSource.loaded.paths.storePath, file, '50', '30'],
      { reject: false },
    );
    expect(killed.signal).toBe('SIGKILL');
    expect(progressOf(file).audit).toMatchObject({ done: true, rows: 2 });
    const raw = new Database(file);
    raw.prepare("UPDATE audit SET reason = 'changed behind its back'").run();
    raw.close();
    const r = await copyCli(sqliteSource, ['--to', file]);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/differs from the source in audit \(2 rows in the source, 2 in the target\)/);
    expect(r.stdout).toMatch(/│ audit .*✗/);
    expect(r.stdout).toMatch(/│ spans .*✓/);
    expect(hasStack(r.stderr)).toBe(false);
  });
});

describe('store copy: refusals (exit 2, the target unchanged)', () => {
  const refused = async (to: string, message: RegExp) => {
    const r = await copyCli(sqliteSource, ['--to', to]);
    expect(r.stderr).toMatch(message);
    expect(r.exitCode).toBe(2);
    expect(hasStack(r.stderr)).toBe(false);
    return r;
  };

  it('a SQLite file holding another store with rows, or a file that is not SQLite', async () => {
    const dir = tempDir({ 'notes.sqlite': 'not a database\n'.repeat(20) });
    const other = path.join(dir, 'other.sqlite');
    const store = Store.open({ path: other });
    store.rollouts.start({ source: 'mine' });
    store.close();
    const before = sha(other);
    await refused(other, /--to .*other\.sqlite is not empty: rollouts has rows; it was not changed/);
    expect(sha(other)).toBe(before);
    const notes = path.join(dir, 'notes.sqlite');
    const notesBefore = sha(notes);
    await refused(notes, /--to .*notes\.sqlite is not a SQLite store/);
    expect(sha(notes)).toBe(notesBefore);
    expect(fs.readdirSync(dir).sort()).toEqual(['notes.sqlite', 'other.sqlite']);
  });

  it('a PostgreSQL database holding a store with rows', async () => {
    const url = freshPostgresUrl();
    const store = Store.open({ path: url });
    store.rollouts.start({ source: 'mine' });
    store.close();
    const before = contents(url);
    await refused(url, /is not empty: rollouts has rows; it was not changed/);
    expect(contents(url)).toEqual(before);
  });

  it('the source itself, by another path', async () => {
    const source = sqliteSource.loaded.paths.storePath;
    const before = count(source, 'rollouts');
    const link = path.join(tempDir(), 'same.sqlite');
    fs.symlinkSync(source, link);
    await refused(link, /--to .*same\.sqlite is the configured store itself/);
    const r = await copyCli(pgSource, ['--to', pgSourceUrl.replace('127.0.0.1', 'localhost')]);
    expect(r.stderr).toMatch(/is the configured store itself/);
    expect(r.exitCode).toBe(2);
    expect(count(source, 'rollouts')).toBe(before);
  });

  it('bad URLs, and a password in the URL (never printed)', async () => {
    const r = await refused(
      'postgres://massgen:s3cret-pw@127.0.0.1:5432/db',
      /--to postgres:\/\/massgen:\*\*\*@127\.0\.0\.1:5432\/db contains a password/,
    );
    expect(r.stdout + r.stderr).not.toContain('s3cret-pw');
    await refused('postgres://127.0.0.1:notaport/db', /--to postgres:\/\/127\.0\.0\.1:notaport\/db is not a valid URL/);
    await refused(
      'mysql://127.0.0.1/db',
      /--to mysql:\/\/127\.0\.0\.1\/db: expected a postgres:\/\/ URL or a SQLite file path/,
    );
    await refused(
      'postgres://massgen@127.0.0.1:1/db',
      /cannot connect to the store at postgres:\/\/massgen@127\.0\.0\.1:1\/db/,
    );
  });

  it('a target from a newer massgen-rl; a source from a newer massgen-rl', async () => {
    const dir = tempDir();
    const newer = path.join(dir, 'newer.sqlite');
    const raw = new Database(newer);
    raw.exec(
      'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
    );
    raw.prepare("INSERT INTO schema_migrations VALUES (99, 'from the future', 0)").run();
    raw.close();
    const before = sha(newer);
    await refused(
      newer,
      /--to .*newer\.sqlite has schema version 99, newer than this massgen-rl supports \(\d+\); it was not changed/,
    );
    expect(sha(newer)).toBe(before);

    const project = tempDir({ 'massgen-rl.yaml': 'store: { path: newer.sqlite }\n' });
    fs.copyFileSync(newer, path.join(project, 'newer.sqlite'));
    new Database(path.join(project, 'newer.sqlite')).pragma('user_version = 99');
    const target = path.join(project, 'copy.sqlite');
    const r = await runCli(['store', 'copy', '--to', target], { cwd: project });
    expect(r.stderr).toMatch(/has schema version 99, newer than this massgen-rl supports/);
    expect(r.exitCode).toBe(2);
    expect(fs.existsSync(target)).toBe(false);
  });

  it('an unfinished copy of another store', async () => {
    const file = path.join(tempDir(), 'copy.sqlite');
    const killed = await execa(
      process.execPath,
      [path.join(FIXTURES, 'store-copy-killed.mjs'), pgSourceUrl, file, '50', '5'],
      { reject: false },
    );
    expect(killed.signal).toBe('SIGKILL');
    const before = contents(file);
    await refused(file, /holds an unfinished copy of another store \(postgres:\/\/.*\); it was not changed/);
    expect(contents(file)).toEqual(before);
  });
});
