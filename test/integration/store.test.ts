import Database from 'better-sqlite3';
import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.js';
import { LATEST_SCHEMA_VERSION, Redactor, Store, exportRollouts } from '../../src/store/index.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { storeDb } from '../../src/store/store.js';
import { FIXTURES, sha, sqliteOf, tempDir } from '../helpers.js';
import { BACKENDS, openStoreOn, storeLocation } from '../support/postgres.js';

const storeIn = (dir: string, redactor?: Redactor) => Store.open({ path: path.join(dir, 'store.sqlite'), redactor });

describe('store (SQLite file)', () => {
  it('creates the schema with recorded migrations, WAL and foreign keys', () => {
    const store = storeIn(tempDir());
    expect(sqliteOf(store).pragma('journal_mode', { simple: true })).toBe('wal');
    expect(sqliteOf(store).pragma('foreign_keys', { simple: true })).toBe(1);
    expect(sqliteOf(store).pragma('user_version', { simple: true })).toBe(LATEST_SCHEMA_VERSION);
    const applied = storeDb(store).prepare('SELECT version, name FROM schema_migrations').all();
    expect(applied).toEqual(MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
    store.close();
  });

  it('upgrades a store of the previous schema in place, keeping its rows', () => {
    const file = path.join(tempDir(), 'store.sqlite');
    const raw = new Database(file);
    raw.exec(
      'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
    );
    raw.exec(MIGRATIONS[0]!.sql);
    raw.prepare('INSERT INTO schema_migrations VALUES (1, ?, 0)').run(MIGRATIONS[0]!.name);
    raw.pragma('user_version = 1');
    raw
      .prepare("INSERT INTO rollouts (id, source, status, started_at) VALUES ('ro_old', 'collect', 'completed', 1)")
      .run();
    raw.close();
    const store = Store.open({ path: file });
    try {
      expect(sqliteOf(store).pragma('user_version', { simple: true })).toBe(LATEST_SCHEMA_VERSION);
      expect(store.rollouts.get('ro_old')).toMatchObject({ status: 'completed', resourceSetId: null });
      expect(store.sets.pointer('production')).toBeUndefined();
    } finally {
      store.close();
    }
  });

  it('refuses a store from a newer version and leaves it untouched', () => {
    const dir = tempDir();
    const file = path.join(dir, 'store.sqlite');
    const raw = new Database(file);
    raw.pragma('user_version = 99');
    raw.close();
    const before = sha(file);
    expect(() => Store.open({ path: file })).toThrow(
      `schema version 99, newer than this massgen-rl supports (${LATEST_SCHEMA_VERSION})`,
    );
    expect(sha(file)).toBe(before);
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
  });

  it('refuses a file that is not SQLite and leaves it untouched', () => {
    const dir = tempDir({ 'store.sqlite': 'just some notes, not a database\n'.repeat(10) });
    const file = path.join(dir, 'store.sqlite');
    const before = sha(file);
    expect(() => Store.open({ path: file })).toThrow(UserError);
    expect(() => Store.open({ path: file })).toThrow(/is not a SQLite database; it was not changed/);
    expect(sha(file)).toBe(before);
  });

  it('refuses a data dir that cannot be created', () => {
    const dir = tempDir({ 'a-file': 'x' });
    expect(() => Store.open({ path: path.join(dir, 'a-file', 'data', 'store.sqlite') })).toThrow(
      /data directory .* is not writable \(ENOTDIR\)/,
    );
  });
});

describe.each(BACKENDS)('store on %s', (backend) => {
  const storeIn = (dir: string, redactor?: Redactor) => openStoreOn(backend, dir, redactor);

  it('assigns a monotonic per-rollout sequence across batches and writers', () => {
    const store = storeIn(tempDir());
    const a = store.rollouts.start();
    const b = store.rollouts.start();
    expect(
      store.spans.append(a, [
        { type: 'prompt', name: 'p1' },
        { type: 'tool', name: 't1' },
      ]),
    ).toEqual([1, 2]);
    expect(store.spans.append(b, [{ type: 'prompt', name: 'p1' }])).toEqual([1]);
    const w = store.spans.writer(a, 2);
    expect([
      w.add({ type: 'message', name: 'm' }),
      w.add({ type: 'message', name: 'm' }),
      w.add({ type: 'reward', name: 'r' }),
    ]).toEqual([3, 4, 5]);
    expect(w.pending).toBe(1);
    w.flush();
    expect(store.spans.list(a).map((s) => s.seq)).toEqual([1, 2, 3, 4, 5]);
    store.close();
  });

  it('writes a batch atomically: one bad span means none of the batch lands', () => {
    const store = storeIn(tempDir());
    const id = store.rollouts.start();
    store.spans.append(id, [{ type: 'prompt', name: 'kept' }]);
    expect(() =>
      store.spans.append(id, [
        { type: 'prompt', name: 'ok' },
        { type: 'nonsense' as 'prompt', name: 'bad' },
      ]),
    ).toThrow(/check constraint/i);
    expect(store.spans.list(id).map((s) => s.name)).toEqual(['kept']);
    store.close();
  });

  it('scrubs API keys and configured patterns before anything is written', () => {
    const dir = tempDir();
    const secret = 'sk-test-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345';
    const redactor = Redactor.fromSettings(
      { envNames: ['MY_API_KEY'], patterns: ['ticket-\\d{4}'], builtinPatterns: true },
      { MY_API_KEY: 'hunter2-very-secret' },
    );
    const store = storeIn(dir, redactor);
    const id = store.rollouts.start({ metadata: { key: 'hunter2-very-secret' } });
    store.spans.append(id, [
      {
        type: 'prompt',
        name: 'call',
        agent: 'a',
        payload: { headers: { authorization: `Bearer ${secret}` }, note: 'ticket-1234 and "hunter2-very-secret"' },
      },
    ]);
    store.rewards.add(id, [{ channel: 'team', family: 'judge', value: 0.5, reason: `judge saw ${secret}` }]);
    store.rollouts.finish(id, { status: 'failed', error: 'auth failed for hunter2-very-secret' });
    const span = store.spans.list(id)[0]!;
    expect(JSON.stringify(span.payload)).toContain('[REDACTED]');
    expect(store.rollouts.get(id)!.error).toBe('auth failed for [REDACTED]');
    const bytes = storedBytes(store, dir);
    store.close();
    for (const leaked of ['hunter2-very-secret', secret, 'ticket-1234']) expect(bytes).not.toContain(leaked);
  });

  it('marks rollouts of dead processes failed at the next open, and leaves live ones alone', async () => {
    const dir = tempDir();
    const file = storeLocation(backend, dir);
    Store.open({ path: file }).close();
    const live = execa(process.execPath, [path.join(FIXTURES, 'hold-running.mjs'), file]);
    const liveId = await new Promise<string>((resolve) =>
      live.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim())),
    );
    const dead = await execa(process.execPath, [path.join(FIXTURES, 'hold-running.mjs'), file, 'exit']);
    const deadId = dead.stdout.trim();
    try {
      const store = Store.open({ path: file });
      expect(store.recovered).toBe(1);
      const recovered = store.rollouts.get(deadId)!;
      expect(recovered.status).toBe('failed');
      expect(recovered.error).toMatch(/^interrupted: process \d+ exited while this was running/);
      expect(store.spans.list(deadId)).toHaveLength(1);
      expect(store.rollouts.get(liveId)!.status).toBe('running');
      store.close();
    } finally {
      live.kill();
      await live.catch(() => {});
    }
  });

  it('lets two real processes write to one store at once without SQLITE_BUSY', async () => {
    const dir = tempDir();
    const file = storeLocation(backend, dir);
    const writer = (label: string) =>
      execa(process.execPath, [path.join(FIXTURES, 'concurrent-writer.mjs'), file, label, '150']);
    const [a, b] = await Promise.all([writer('collect'), writer('train')]);
    expect([a.stdout, b.stdout]).toEqual(['collect done', 'train done']);
    const store = Store.open({ path: file });
    expect(store.rollouts.count({ status: 'completed' })).toBe(300);
    expect(store.stats().counts.spans).toBe(6000);
    const seqs = store.spans.list(store.rollouts.list({ limit: 1 })[0]!.id).map((s) => s.seq);
    expect(seqs).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    store.close();
  });

  it('exports rollouts as JSONL with spans, rewards and filters', async () => {
    const store = storeIn(tempDir());
    const ids = [0, 1, 2].map((i) => {
      const id = store.rollouts.start({ taskId: null, metadata: { i } });
      store.spans.append(id, [
        { type: 'prompt', name: 'ask', agent: 'agent_a', payload: { content: `q${i}`, nested: { n: i } } },
        { type: 'coordination', name: 'vote', parentSeq: 1, payload: { target: 'agent1' } },
      ]);
      store.rewards.add(id, [{ channel: 'team', family: 'exact', value: i }]);
      store.rollouts.finish(id, { status: i === 1 ? 'failed' : 'completed', totalReward: i, tokens: 5 });
      return id;
    });
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (c: Buffer) => chunks.push(c));
    const result = await exportRollouts(store, out, { pageSize: 2 });
    const lines = Buffer.concat(chunks)
      .toString()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, any>);
    expect(result).toMatchObject({ rollouts: 3, spans: 6 });
    expect(lines.map((l) => l.id)).toEqual(ids);
    expect(lines[2]).toMatchObject({
      status: 'completed',
      total_reward: 2,
      costs: { tokens: 5 },
      rewards: [{ family: 'exact', value: 2 }],
    });
    expect(lines[2]!.spans[0]).toMatchObject({
      seq: 1,
      type: 'prompt',
      agent: 'agent_a',
      payload: { content: 'q2', nested: { n: 2 } },
    });
    expect(lines[2]!.spans[1]).toMatchObject({ seq: 2, parent_seq: 1, type: 'coordination' });
    const filtered = new PassThrough();
    const got: Buffer[] = [];
    filtered.on('data', (c: Buffer) => got.push(c));
    await exportRollouts(store, filtered, { status: 'completed', minReward: 1 });
    expect(
      Buffer.concat(got)
        .toString()
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { id: string }).id),
    ).toEqual([ids[2]]);
    store.close();
  });

  it('flushes a partial batch once the oldest span has waited maxDelayMs', async () => {
    const store = storeIn(tempDir());
    const id = store.rollouts.start();
    const w = store.spans.writer(id, 64, 50);
    w.add({ type: 'message', name: 'one' });
    expect(store.spans.list(id)).toHaveLength(0);
    await new Promise((r) => setTimeout(r, 120));
    expect(store.spans.list(id).map((s) => s.name)).toEqual(['one']);
    expect(w.pending).toBe(0);
    store.close();
  });
});

/** Everything a store holds, as bytes: the SQLite files, or every PostgreSQL table's rows as text. */
function storedBytes(store: Store, dir: string): string {
  if (storeDb(store).dialect === 'sqlite') {
    sqliteOf(store).pragma('wal_checkpoint(TRUNCATE)');
    return Buffer.concat(fs.readdirSync(dir).map((f) => fs.readFileSync(path.join(dir, f)))).toString('latin1');
  }
  const tables = storeDb(store)
    .prepare("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    .pluck()
    .all() as string[];
  return tables
    .map((t) => (storeDb(store).prepare(`SELECT t::text FROM ${t} t`).pluck().all() as string[]).join('\n'))
    .join('\n');
}
