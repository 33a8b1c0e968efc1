import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { openStore } from '../../src/runtime/store.js';
import { tempDir } from '../helpers.js';
import { holdLock } from '../support/chaos.js';

// A training run that ends while another process holds the store's write lock for longer than busy_timeout_ms (the
// chaos harness found the cycle failing with SQLite's "database is locked" and the trained weights unregistered):
// its metric rows wait for the lock, and its closing writes are retried as collect's are.
const BUSY_MS = 200;

describe('training writes against a store locked past busy_timeout_ms', () => {
  it('metric rows wait for the lock and the run finishes once it is released', async () => {
    const dir = tempDir({ 'massgen-rl.yaml': `store: { busy_timeout_ms: ${BUSY_MS} }\n` });
    const store = openStore(loadConfig({ cwd: dir }));
    try {
      const runId = store.trainingRuns.start({}, { algo: 'sft' });
      const writer = store.trainingMetrics.writer(runId, 2, 50);
      // 3 × busy_timeout_ms: past what one write waits, within what a retrying writer waits (4 ×)
      const holder = (await holdLock(dir, 3 * BUSY_MS))!;
      writer.add(1, { loss: 1 });
      expect(() => writer.add(2, { loss: 0.5 })).not.toThrow();
      expect(writer.pending).toBe(2);
      // the closing flush waits out the lock (it throws while locked, and store.retrying tries again)
      await store.retrying(() => writer.flush());
      expect(store.trainingMetrics.count(runId)).toBe(2);
      await store.retrying(() => store.trainingRuns.finish(runId, 'completed', { steps: 2 }));
      await holder.released;
      expect(store.trainingRuns.get(runId)?.status).toBe('completed');
    } finally {
      store.close();
    }
  });

  it("a lock held past the retries is a StoreBusyError naming the store, not SQLite's message", async () => {
    const dir = tempDir({ 'massgen-rl.yaml': `store: { busy_timeout_ms: ${BUSY_MS} }\n` });
    const store = openStore(loadConfig({ cwd: dir }));
    try {
      const runId = store.trainingRuns.start({}, { algo: 'sft' });
      const holder = (await holdLock(dir, 10 * BUSY_MS))!;
      await expect(store.retrying(() => store.trainingRuns.finish(runId, 'completed', {}))).rejects.toThrow(
        /stayed locked by another process/,
      );
      await holder.released;
    } finally {
      store.close();
    }
  });
});
