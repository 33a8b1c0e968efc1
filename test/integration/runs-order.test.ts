import { afterEach, describe, expect, it, vi } from 'vitest';
import { tempDir } from '../helpers.js';
import { BACKENDS, openStoreOn } from '../support/postgres.js';

const N = 8;

afterEach(() => {
  vi.restoreAllMocks();
});

describe.each(BACKENDS)('runs started in the same millisecond on %s', (backend) => {
  it('are listed newest inserted first, for every kind of run (not by their random ids)', () => {
    const store = openStoreOn(backend, tempDir());
    try {
      const set = store.sets.add({ agents: {} }, { kind: 'manual' });
      vi.spyOn(Date, 'now').mockReturnValue(1_795_716_701_676);
      for (const runs of [store.collectRuns, store.trainingRuns, store.loopRuns]) {
        const ids = Array.from({ length: N }, (_, i) =>
          runs.start({ cycle: i }, runs === store.trainingRuns ? { algo: 'sft' } : {}),
        );
        expect(runs.latest(N).map((r) => r.id)).toEqual([...ids].reverse());
        expect(runs.latest(3).map((r) => r.detail.cycle)).toEqual([7, 6, 5]);
      }
      const evals = Array.from({ length: N }, () => store.evaluations.startRun(set.id, set.id, {}));
      expect(store.evaluations.runs({ limit: N }).map((r) => r.id)).toEqual([...evals].reverse());
      // A start after the clock was stepped back still comes first, just after the one before it.
      const before = store.loopRuns.start({ cycle: 'before' });
      vi.spyOn(Date, 'now').mockReturnValue(1_795_716_701_000);
      const after = store.loopRuns.start({ cycle: 'after' });
      const [a, b] = store.loopRuns.latest(2);
      expect([a!.id, b!.id]).toEqual([after, before]);
      expect(a!.startedAt).toBe(b!.startedAt + 1);
    } finally {
      store.close();
    }
  });
});
