import { execa, type ResultPromise } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { importMassgenLogs } from '../../src/pipeline/utilities/import-massgen.js';
import { addFeedback, recomputeRewards } from '../../src/pipeline/utilities/rewards.js';
import { withRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { StoreBusyError } from '../../src/store/index.js';
import { SyncPgConnection } from '../../src/store/postgres/bridge.js';
import { WRITE_LOCK } from '../../src/store/postgres/pg-db.js';
import { FIXTURES, hasStack, runCli, tempDir } from '../helpers.js';
import { BACKENDS, storeLocation, type Backend } from '../support/postgres.js';

const LOGS = path.join(FIXTURES, 'massgen-logs');
const MORE_LOGS = path.join(FIXTURES, 'massgen-real');
const BUSY_MS = 200;

let release: (() => Promise<void>) | undefined;
afterEach(async () => {
  await release?.();
  release = undefined;
});

/** Another process takes the store's write lock and keeps it until release(). */
async function holdLock(backend: Backend, location: string): Promise<void> {
  if (backend === 'postgres') {
    // The session-level form of the lock that write transactions take per transaction.
    const conn = new SyncPgConnection({ connectionString: location });
    conn.query({ sql: WRITE_LOCK.replace('pg_advisory_xact_lock', 'pg_advisory_lock'), params: [], array: false });
    release = async () => conn.close();
    return;
  }
  const script = path.join(FIXTURES, 'hold-lock.mjs');
  const holder: ResultPromise = execa(process.execPath, [script, location, 'forever'], { reject: false });
  release = async () => {
    holder.kill('SIGKILL');
    await holder.catch(() => {});
  };
  await new Promise<void>((resolve, reject) => {
    holder.stdout!.on('data', (d: Buffer) => d.toString().includes('locked') && resolve());
    holder.once('exit', () => reject(new Error('the lock holder exited early')));
  });
}

/** A project whose store holds the imported MassGen fixture rollouts; writers wait BUSY_MS for a lock. */
async function project(backend: Backend) {
  const dir = tempDir();
  const location = storeLocation(backend, dir);
  const where = backend === 'postgres' ? `url: "${location}"` : `path: ${location}`;
  const yaml = `project:\n  name: locked\nstore: { ${where}, busy_timeout_ms: ${BUSY_MS} }\n`;
  fs.writeFileSync(path.join(dir, 'massgen-rl.yaml'), yaml);
  const loaded = loadConfig({ cwd: dir });
  const summary = await withRuntime(loaded, async (rt) => importMassgenLogs(rt, { dir: LOGS }));
  expect(summary.imported.length).toBeGreaterThan(0);
  return { dir, loaded, location, rollout: summary.imported[0]!.rollout_id };
}

/** What a refused write must leave as it was. */
function contents(loaded: LoadedConfig) {
  const store = openStore(loaded, { mustExist: true });
  try {
    return { rollouts: store.rollouts.list().map((r) => [r.id, r.totalReward]), rewards: store.stats().counts };
  } finally {
    store.close();
  }
}

const LOCKED = new RegExp(`store .+ stayed locked by another process for ${(BUSY_MS / 1000).toFixed(1)} s`);

describe.each(BACKENDS)('writing commands against a store another process holds locked (%s)', (backend) => {
  const commands: [string, (rt: Runtime, rollout: string) => Promise<unknown>][] = [
    ['feedback', (rt, rollout) => addFeedback(rt, rollout, { score: 1 })],
    ['rewards recompute', (rt) => recomputeRewards(rt)],
    ['traces import', async (rt) => importMassgenLogs(rt, { dir: MORE_LOGS })],
  ];

  it.each(commands)('%s: a StoreBusyError (exit 2) after busy_timeout_ms, nothing written', async (_name, run) => {
    const { loaded, location, rollout } = await project(backend);
    const before = contents(loaded);
    const err = await withRuntime(loaded, async (rt) => {
      rt.store();
      await holdLock(backend, location);
      return run(rt, rollout).then(
        () => undefined,
        (e: unknown) => e,
      );
    });
    expect(err).toBeInstanceOf(StoreBusyError);
    expect((err as StoreBusyError).exitCode).toBe(2);
    expect((err as Error).message).toMatch(LOCKED);
    await release!();
    release = undefined;
    expect(contents(loaded)).toEqual(before);
  });

  it('the CLI: exit 2 with the wait it tried, no stack, for each of them and for rollback', async () => {
    const { dir, loaded, location, rollout } = await project(backend);
    const before = contents(loaded);
    await holdLock(backend, location);
    // rollback first writes the production set outside store.transaction (a repository's own transaction).
    const commands = [
      ['feedback', rollout, '--score', '1'],
      ['rewards', 'recompute'],
      ['traces', 'import', '--massgen-logs', MORE_LOGS],
      ['rollback'],
    ];
    for (const args of commands) {
      const r = await runCli(args, { cwd: dir });
      expect(r.exitCode, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(LOCKED);
      expect(hasStack(r.stderr)).toBe(false);
    }
    await release!();
    release = undefined;
    expect(contents(loaded)).toEqual(before);
  });
});
