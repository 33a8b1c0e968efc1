import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { acquireCycleLock } from '../../src/scheduler/lock.js';
import { Store } from '../../src/store/index.js';
import { tempDir } from '../helpers.js';
import { holdLock, storeFile } from '../support/chaos.js';

// The cycle lock's release runs in a `finally`: when the store refuses it (a full disk, a lock held past
// busy_timeout_ms) it must not hide the error that ended the cycle, and the row it leaves must not keep this
// process (a `loop` that keeps running) from its next cycle.
describe('a cycle lock whose release the store refused', () => {
  it('does not throw, and the same process takes the row it left over at its next cycle', async () => {
    const dir = tempDir();
    fs.mkdirSync(`${dir}/.massgen-rl`);
    const store = Store.open({ path: storeFile(dir), busyTimeoutMs: 100 });
    try {
      const first = acquireCycleLock(store, 60_000);
      const holder = (await holdLock(dir, 1500))!;
      expect(() => first.release()).not.toThrow();
      await holder.released;
      expect(store.locks.holder('loop-cycle')?.pid).toBe(process.pid); // the row stayed
      const next = acquireCycleLock(store, 60_000);
      expect(next.tookOverFrom?.pid).toBe(process.pid);
      next.release();
      expect(store.locks.holder('loop-cycle')).toBeUndefined();
    } finally {
      store.close();
    }
  });

  it('a cycle this process still holds is not taken over by another of its own', () => {
    const store = Store.open({ path: `${tempDir()}/store.sqlite` });
    try {
      const held = acquireCycleLock(store, 60_000);
      expect(() => acquireCycleLock(store, 60_000)).toThrow(/another cycle is running: process \d+/);
      held.release();
    } finally {
      store.close();
    }
  });
});
