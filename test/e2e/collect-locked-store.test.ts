import Database from 'better-sqlite3';
import { execa, type ResultPromise } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { openStore } from '../../src/runtime/store.js';
import { BIN, FIXTURES, hasStack, tempDir } from '../helpers.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

let server: ScriptedServer | undefined;
let holder: ResultPromise | undefined;
afterEach(async () => {
  holder?.kill('SIGKILL');
  await holder?.catch(() => {});
  holder = undefined;
  await server?.close();
  server = undefined;
});

const TASKS = Array.from({ length: 6 }, (_, i) =>
  JSON.stringify({ id: `t${i}`, prompt: `What is ${i} + 42 - ${i}?`, reference: '42' }),
).join('\n');

/**
 * A collect of six tasks, two at a time, each reply 150 ms late; store.busy_timeout_ms is 300. The replies wait for
 * release(): on a loaded machine the whole run could otherwise end before another process has taken the lock.
 */
async function startCollect() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  server = await startScriptedServer(async (req) => {
    await released;
    if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: 'Final answer: 42', delayMs: 150 };
    return shownLabels(req).length
      ? { content: 'VOTE: agent1 | right', delayMs: 150 }
      : { content: 'ANSWER: 42', delayMs: 150 };
  });
  const dir = tempDir({
    'massgen-rl.yaml': `models:\n  stub: { base_url: "${server.baseUrl}", model: m }
agents:\n  - { id: a, model: stub, tool_mode: text }\n  - { id: b, model: stub, tool_mode: text }
tasks:\n  sources: [{ file: tasks.jsonl }]
collect: { concurrency: 2, split: all }
store: { busy_timeout_ms: 300 }\n`,
    'tasks.jsonl': TASKS,
  });
  const storePath = path.join(dir, '.massgen-rl', 'store.sqlite');
  const child = execa(process.execPath, [BIN, 'collect'], {
    cwd: dir,
    reject: false,
    stdin: 'ignore',
    env: { NO_COLOR: '1' },
  });
  // Lock only once rollouts are being recorded (their first calls waiting): their spans and closing writes meet it.
  const deadline = Date.now() + 20_000;
  while (runningRollouts(storePath) < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return { dir, storePath, child, release };
}

function runningRollouts(storePath: string): number {
  if (!fs.existsSync(storePath)) return 0;
  const db = new Database(storePath, { readonly: true, timeout: 1000 });
  try {
    return db.prepare("SELECT COUNT(*) FROM rollouts WHERE status = 'running'").pluck().get() as number;
  } catch {
    return 0;
  } finally {
    db.close();
  }
}

/** Another process takes the write lock (and keeps it for ms, or until killed). */
async function holdLock(storePath: string, ms: number | 'forever'): Promise<void> {
  holder = execa(process.execPath, [path.join(FIXTURES, 'hold-lock.mjs'), storePath, String(ms)], { reject: false });
  await new Promise<void>((resolve, reject) => {
    holder!.stdout!.on('data', (d: Buffer) => d.toString().includes('locked') && resolve());
    holder!.once('exit', () => reject(new Error('the lock holder exited early')));
  });
}

function checkStore(dir: string) {
  const db = new Database(path.join(dir, '.massgen-rl', 'store.sqlite'), { readonly: true });
  try {
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    for (const payload of db.prepare('SELECT payload FROM spans').pluck().all() as string[]) JSON.parse(payload);
  } finally {
    db.close();
  }
}

describe('collect against a store another process holds locked', () => {
  it('waits out a lock held longer than busy_timeout_ms, with backoff, and completes the run', async () => {
    const { dir, storePath, child, release } = await startCollect();
    await holdLock(storePath, 1000).finally(release);
    const r = await child;
    expect(hasStack(String(r.stderr)), String(r.stderr)).toBe(false);
    expect(r.exitCode).toBe(0);
    const store = openStore(loadConfig({ cwd: dir }));
    try {
      expect(store.rollouts.list().map((x) => x.status)).toEqual(Array(6).fill('completed'));
      expect(store.collectRuns.latest(1)[0]!.status).toBe('completed');
    } finally {
      store.close();
    }
    checkStore(dir);
  });

  it('a lock that outlasts the retries ends the run cleanly (exit 1, a message, no stack); every rollout ends up closed', async () => {
    const { dir, storePath, child, release } = await startCollect();
    await holdLock(storePath, 'forever').finally(release);
    const r = await child;
    expect(hasStack(String(r.stderr)), String(r.stderr)).toBe(false);
    expect(r.exitCode).toBe(1);
    expect(String(r.stderr)).toMatch(/store .*store\.sqlite stayed locked by another process/);
    holder!.kill('SIGKILL');
    await holder;
    expect(fs.existsSync(storePath)).toBe(true);
    // Rollouts the locked store kept collect from closing are marked failed when the store is next opened.
    const store = openStore(loadConfig({ cwd: dir }));
    try {
      const rollouts = store.rollouts.list();
      expect(rollouts.length).toBeGreaterThan(0);
      for (const x of rollouts)
        expect(
          x.status === 'completed' || (x.status === 'failed' && /^interrupted: process \d+ exited/.test(x.error ?? '')),
          `${x.status} ${x.error}`,
        ).toBe(true);
      expect(rollouts.some((x) => x.status === 'failed')).toBe(true);
      expect(store.collectRuns.latest(1)[0]!.status).toBe('failed');
    } finally {
      store.close();
    }
    checkStore(dir);
  });
});
