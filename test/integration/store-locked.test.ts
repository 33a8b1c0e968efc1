import { execa, type ResultPromise } from 'execa';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Store, StoreBusyError } from '../../src/store/index.js';
import { FIXTURES, tempDir } from '../helpers.js';

let holder: ResultPromise | undefined;
afterEach(async () => {
  holder?.kill('SIGKILL');
  await holder?.catch(() => {});
  holder = undefined;
});

/** A second process takes the store's write lock and keeps it for ms (or until killed). */
async function holdLock(file: string, ms: number | 'forever'): Promise<void> {
  holder = execa(process.execPath, [path.join(FIXTURES, 'hold-lock.mjs'), file, String(ms)], { reject: false });
  await new Promise<void>((resolve, reject) => {
    holder!.stdout!.on('data', (d: Buffer) => d.toString().includes('locked') && resolve());
    holder!.once('exit', () => reject(new Error('the lock holder exited early')));
  });
}

describe('writes while another process holds the store locked', () => {
  it('span writers keep their spans and retry; store.write waits a lock longer than busy_timeout_ms out', async () => {
    const file = path.join(tempDir(), 'store.sqlite');
    const store = Store.open({ path: file, busyTimeoutMs: 250 });
    const id = store.rollouts.start();
    await holdLock(file, 600);
    const w = store.spans.writer(id, 2, 20);
    for (let i = 0; i < 5; i++) w.add({ type: 'message', name: `m${i}` });
    await new Promise((r) => setTimeout(r, 100));
    expect(store.spans.list(id)).toEqual([]);
    await store.write(() => {
      w.flush();
      store.rollouts.finish(id, { status: 'completed' });
    });
    expect(store.spans.list(id).map((s) => s.name)).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
    expect(store.rollouts.get(id)!.status).toBe('completed');
    store.close();
  });

  it('store.write gives up with a StoreBusyError (exit 2, nothing written) once the lock outlasts 4 × busy_timeout_ms', async () => {
    const file = path.join(tempDir(), 'store.sqlite');
    const store = Store.open({ path: file, busyTimeoutMs: 100 });
    await holdLock(file, 'forever');
    const started = Date.now();
    const err = await store.write(() => store.rollouts.start()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreBusyError);
    expect((err as StoreBusyError).exitCode).toBe(2);
    expect((err as Error).message).toMatch(/store .*store\.sqlite stayed locked by another process for \d+\.\d s/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(store.rollouts.count()).toBe(0);
    store.close();
  });

  it('opening a store that must be written first (a new one is migrated) while it is locked is a StoreBusyError, not a crash', async () => {
    const file = path.join(tempDir(), 'store.sqlite');
    await holdLock(file, 'forever');
    let err: unknown;
    try {
      Store.open({ path: file, busyTimeoutMs: 50 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StoreBusyError);
    expect((err as Error).message).toMatch(/stayed locked by another process/);
  });

  it('a timed flush that fails for another reason does not crash the process: the next flush reports it', async () => {
    const store = Store.open({ path: path.join(tempDir(), 'store.sqlite') });
    const w = store.spans.writer('ro_missing', 64, 10);
    w.add({ type: 'message', name: 'orphan' });
    await new Promise((r) => setTimeout(r, 60));
    expect(() => w.flush()).toThrow(/FOREIGN KEY constraint failed/);
    expect(w.pending).toBe(1);
    store.close();
  });
});
