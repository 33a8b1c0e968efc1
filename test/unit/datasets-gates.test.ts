import { describe, expect, it } from 'vitest';
import { assertGates, buildDataset, checkGates } from '../../src/datasets/index.js';
import { GateError } from '../../src/errors.js';
import { fixtureStore, teamRollout } from '../fixtures/datasets/team-rollouts.js';

const gates = { min_examples: 8, min_clean_share: 0.5, min_categories: 2 };

describe('dataset quality gates', () => {
  it('passes with a structured result when every gate holds', () => {
    const r = checkGates({ rows: 10, clean_rows: 6, categories: { arithmetic: 7, geography: 3 } }, gates);
    expect(r).toEqual({
      passed: true,
      message: '',
      checks: [
        { gate: 'min_examples', actual: 10, required: 8, passed: true, detail: '10 examples (need ≥ 8)' },
        {
          gate: 'min_clean_share',
          actual: 0.6,
          required: 0.5,
          passed: true,
          detail: 'clean share 60.0%: 6 of 10 examples clean (need ≥ 50.0%)',
        },
        {
          gate: 'min_categories',
          actual: 2,
          required: 2,
          passed: true,
          detail: '2 task categories (arithmetic, geography) (need ≥ 2)',
        },
      ],
    });
    expect(assertGates({ rows: 10, clean_rows: 6, categories: { arithmetic: 7, geography: 3 } }, gates).passed).toBe(
      true,
    );
  });

  it('names every failed gate with its counts, and assertGates throws a GateError (exit 1)', () => {
    const stats = { algo: 'sft', rows: 3, clean_rows: 1, categories: { arithmetic: 3 } };
    const r = checkGates(stats, gates);
    expect(r.passed).toBe(false);
    expect(r.checks.map((c) => c.passed)).toEqual([false, false, false]);
    expect(r.message).toBe(
      'sft dataset failed 3 quality gates: 3 examples (need ≥ 8); clean share 33.3%: 1 of 3 examples clean (need ≥ 50.0%); 1 task category (arithmetic) (need ≥ 2)',
    );
    let thrown: unknown;
    try {
      assertGates(stats, gates);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(GateError);
    expect((thrown as GateError).exitCode).toBe(1);
    expect((thrown as GateError).message).toBe(r.message);
    expect((thrown as GateError).hint).toMatch(/train\.gates/);
    expect(
      checkGates({ rows: 0, clean_rows: 0, categories: {} }, { min_examples: 1, min_clean_share: 0, min_categories: 1 })
        .message,
    ).toBe('dataset failed 2 quality gates: 0 examples (need ≥ 1); 0 task categories (need ≥ 1)');
  });

  it('is checked on built datasets: clean examples, categories from the task rows', async () => {
    const { store, dir } = fixtureStore();
    teamRollout(store, { taskId: 'mul', first: { agent: 'a', content: '42' }, invalid: ['b'] });
    teamRollout(store, { taskId: 'cap', first: { agent: 'b', content: 'Paris' }, drop: 'c' });
    const built = await buildDataset(store, {
      algo: 'ppo',
      dataDir: dir,
      gates: { min_examples: 1, min_clean_share: 0.9, min_categories: 2 },
    });
    // mul: a answers, votes, presents; b replies without an action, then votes (not clean); c votes. cap: c is dropped.
    expect(built.stats.categories).toEqual({ arithmetic: 6, geography: 4 });
    expect(built.stats).toMatchObject({ rows: 10, clean_rows: 8 });
    expect(built.gates!.passed).toBe(false);
    expect(built.gates!.message).toBe(
      'ppo dataset failed 1 quality gate: clean share 80.0%: 8 of 10 examples clean (need ≥ 90.0%)',
    );
    expect(built.manifest.gates).toEqual(built.gates);
    expect(() => assertGates(built.stats, { min_examples: 1, min_clean_share: 0.9, min_categories: 2 })).toThrow(
      /8 of 10 examples clean/,
    );
    store.close();
  });
});
