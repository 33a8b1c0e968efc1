import { afterEach, describe, expect, it, vi } from 'vitest';
import { openCycle } from '../../src/scheduler/cycles.js';
import { tempDir } from '../helpers.js';
import { BACKENDS, openStoreOn } from '../support/postgres.js';

// The chaos run steps the clock: a run started after the clock went back (NTP correcting a clock that ran
// ahead) must still be the latest, or the loop takes up an older cycle, or numbers a new one twice.
afterEach(() => vi.useRealTimers());

describe.each(BACKENDS)('runs started after the clock was stepped back (%s)', (backend) => {
  it('sort after the ones before; the loop numbers its cycles on and resumes the one it left', () => {
    const store = openStoreOn(backend, tempDir());
    try {
      vi.useFakeTimers({ toFake: ['Date'] });
      const now = Date.now();
      vi.setSystemTime(now + 2 * 3600_000); // the clock ran two hours ahead
      const first = openCycle(store, ['collect']);
      store.loopRuns.finish(first.id, 'completed');
      vi.setSystemTime(now); // and was set right
      const second = openCycle(store, ['collect']);
      expect(second.state.cycle).toBe(first.state.cycle + 1);
      expect(store.loopRuns.latest(1)[0]!.id).toBe(second.id);
      store.loopRuns.finish(second.id, 'failed', undefined, 'collect failed');
      const resumed = openCycle(store, ['collect']);
      expect(resumed).toMatchObject({ id: second.id, resumed: true });
      const set = store.sets.add({ agents: {} }, { kind: 'manual' });
      store.evaluations.startRun(set.id, set.id, {});
      vi.setSystemTime(now - 3600_000);
      const ev = store.evaluations.startRun(set.id, set.id, {});
      expect(store.evaluations.runs({ limit: 1 }).map((r) => r.id)).toEqual([ev]);
    } finally {
      store.close();
    }
  });
});
