import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';
import { BACKENDS, openStoreOn } from '../support/postgres.js';

describe.each(BACKENDS)('curriculum store (%s)', (backend) => {
  it("keeps each suite's newest level change and tallies results per level and category", () => {
    const store = openStoreOn(backend, tempDir({}));
    try {
      expect(store.curriculum.levels().size).toBe(0);
      expect(store.curriculum.tally('arithmetic', 0)).toEqual({ trials: 0, successes: 0, categories: [] });
      const r = (id: string, level: 0 | 1, category: string, success: boolean) => ({
        rolloutId: id,
        suite: 'arithmetic',
        level,
        category,
        success,
      });
      store.curriculum.addResults([r('a', 0, 'arithmetic/add', true), r('b', 0, 'arithmetic/mul', false)]);
      // A rollout recorded twice counts once.
      store.curriculum.addResults([r('a', 0, 'arithmetic/add', false), r('c', 1, 'arithmetic/add', true)]);
      expect(store.curriculum.tally('arithmetic', 0)).toEqual({
        trials: 2,
        successes: 1,
        categories: [
          { category: 'arithmetic/add', trials: 1, successes: 1 },
          { category: 'arithmetic/mul', trials: 1, successes: 0 },
        ],
      });
      store.curriculum.setLevel({ suite: 'arithmetic', fromLevel: 0, level: 1, reason: 'first', detail: { n: 1 } });
      const second = store.curriculum.setLevel({
        suite: 'arithmetic',
        fromLevel: 1,
        level: 2,
        reason: 'second',
        detail: {},
      });
      store.curriculum.setLevel({ suite: 'multi_step', fromLevel: 0, level: 1, reason: 'other', detail: {} });
      expect(store.curriculum.levels().get('arithmetic')).toEqual(second);
      expect([...store.curriculum.levels().keys()]).toEqual(['arithmetic', 'multi_step']);
      expect(store.curriculum.history().map((c) => c.reason)).toEqual(['other', 'second', 'first']);
      expect(store.curriculum.history()[2]).toMatchObject({ fromLevel: 0, level: 1, detail: { n: 1 } });
      expect(store.stats().counts).toMatchObject({ curriculum_levels: 3, curriculum_results: 3 });
    } finally {
      store.close();
    }
  });
});
