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
      // A later start still comes first, whatever was inserted after it.
      const later = store.loopRuns.start({ cycle: 'later' });
      vi.spyOn(Date, 'now').mockReturnValue(1_795_716_701_000);
      const earlier = store.loopRuns.start({ cycle: 'earlier' });
      expect(store.loopRuns.latest(1)[0]!.id).toBe(later);
      expect(store.loopRuns.latest(N + 2).at(-1)!.id).toBe(earlier);
    } finally {
      store.close();
    }
  });
});
