import { describe, expect, it } from 'vitest';
import { compare, type Pair } from '../../src/evaluation/compare.js';
import { checkGates, gatesPass } from '../../src/evaluation/gates.js';
import {
  exactBinomialTwoSided,
  exactBinomialUpper,
  holmAdjusted,
  pairedBootstrap,
  winTieLoss,
} from '../../src/evaluation/stats.js';
import type { EvalResult } from '../../src/store/index.js';
import { Rng } from '../../src/tasks/prng.js';

const BOOT = { resamples: 10_000, confidence: 0.95, seed: 7 };
const GATES = {
  min_pairs: 10,
  min_improvement: 0,
  ci_lower_above_zero: true,
  max_category_regression: 0.1,
  category_significance: true,
  category_min_pairs: 8,
  category_alpha: 0.05,
  max_cost_increase: 0.5,
};

function result(over: Partial<EvalResult>): EvalResult {
  return {
    servingHash: 's',
    setId: 's',
    taskHash: 'h',
    seed: 1,
    settingsHash: 'x',
    taskId: 't',
    category: 'c',
    rolloutId: null,
    evalRunId: null,
    status: 'completed',
    reward: 0,
    success: 0,
    consensus: true,
    rounds: 2,
    tokens: 100,
    wallMs: 10,
    ...over,
  };
}

/** n pairs whose candidate reward is baseline + shift + noise (both sides share the task's difficulty). */
function pairs(n: number, shift: number, seed: number, category = (i: number) => (i % 2 ? 'math' : 'text')): Pair[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, (_, i) => {
    const difficulty = rng.next();
    const b = difficulty + (rng.next() - 0.5) * 0.4;
    const c = difficulty + shift + (rng.next() - 0.5) * 0.4;
    return {
      taskId: `t${i}`,
      category: category(i),
      seed: 1,
      baseline: result({ taskHash: `h${i}`, reward: b, success: b > 0.5 ? 1 : 0, category: category(i) }),
      candidate: result({ taskHash: `h${i}`, reward: c, success: c > 0.5 ? 1 : 0, category: category(i) }),
    };
  });
}

describe('paired statistics', () => {
  it('finds a known improvement: the CI excludes 0, the sign test rejects, every gate passes', () => {
    const cmp = compare(pairs(60, 0.25, 1), BOOT);
    const reward = cmp.overall.find((m) => m.metric === 'reward')!;
    expect(reward.n).toBe(60);
    expect(reward.diff!.mean).toBeGreaterThan(0.15);
    expect(reward.diff!.low).toBeGreaterThan(0);
    expect(reward.pValue).toBeLessThan(0.01);
    expect(reward.counts.wins).toBeGreaterThan(reward.counts.losses);
    expect(gatesPass(checkGates(cmp, 'reward', GATES))).toBe(true);
  });

  it('does not find a null difference: the CI holds 0 and the CI gate fails', () => {
    for (const seed of [2, 3, 4]) {
      const cmp = compare(pairs(60, 0, seed), BOOT);
      const reward = cmp.overall.find((m) => m.metric === 'reward')!;
      expect(reward.diff!.low).toBeLessThan(0);
      expect(reward.diff!.high).toBeGreaterThan(0);
      const gates = checkGates(cmp, 'reward', GATES);
      expect(gates.find((g) => g.gate === 'ci_lower_above_zero')!.passed).toBe(false);
      expect(gatesPass(gates)).toBe(false);
    }
  });

  it('bootstraps deterministically per seed with at least the requested resamples, and brackets the mean', () => {
    const diffs = [0.1, -0.2, 0.3, 0.05, 0.4, -0.1, 0.2];
    const a = pairedBootstrap(diffs, BOOT);
    expect(pairedBootstrap(diffs, BOOT)).toEqual(a);
    expect(a.resamples).toBe(10_000);
    expect(a.low).toBeLessThan(a.mean);
    expect(a.high).toBeGreaterThan(a.mean);
    const rng = new Rng(9);
    const many = Array.from({ length: 50 }, () => rng.next() - 0.4);
    expect(pairedBootstrap(many, { ...BOOT, seed: 8 }).low).not.toBe(pairedBootstrap(many, BOOT).low);
    expect(pairedBootstrap([], BOOT).resamples).toBe(0);
  });

  it('computes exact two-sided binomial p-values (sign test, McNemar)', () => {
    expect(exactBinomialTwoSided(0, 0)).toBe(1);
    expect(exactBinomialTwoSided(5, 10)).toBeCloseTo(1, 10);
    expect(exactBinomialTwoSided(0, 10)).toBeCloseTo(2 / 1024, 12);
    expect(exactBinomialTwoSided(10, 10)).toBeCloseTo(2 / 1024, 12);
    expect(exactBinomialTwoSided(8, 10)).toBeCloseTo(0.109375, 10); // 2 × (1 + 10 + 45) / 1024
    expect(exactBinomialTwoSided(300, 1000)).toBeLessThan(1e-30);
    expect(winTieLoss([0.1, 0, -0.2, 1e-12])).toEqual({ wins: 1, ties: 2, losses: 1 });
  });

  it('tests binary success with exact McNemar on the discordant pairs', () => {
    const ps: Pair[] = [
      ...Array.from({ length: 9 }, (_, i) => ({
        taskId: `w${i}`,
        category: 'c',
        seed: 1,
        baseline: result({ success: 0 }),
        candidate: result({ success: 1 }),
      })),
      { taskId: 'l', category: 'c', seed: 1, baseline: result({ success: 1 }), candidate: result({ success: 0 }) },
      ...Array.from({ length: 5 }, (_, i) => ({
        taskId: `t${i}`,
        category: 'c',
        seed: 1,
        baseline: result({ success: 1 }),
        candidate: result({ success: 1 }),
      })),
    ];
    const success = compare(ps, BOOT).overall.find((m) => m.metric === 'success')!;
    expect(success).toMatchObject({ test: 'mcnemar', counts: { wins: 9, ties: 5, losses: 1 } });
    expect(success.pValue).toBeCloseTo(exactBinomialTwoSided(9, 10), 12);
  });

  it('gates: a regressing category, a cost over the ceiling and too small an improvement each fail with their numbers', () => {
    const ps = pairs(40, 0.3, 5).map((p) =>
      p.category === 'math' ? { ...p, candidate: { ...p.candidate, reward: p.baseline.reward! - 0.3 } } : p,
    );
    const costly = ps.map((p) => ({ ...p, candidate: { ...p.candidate, tokens: 400 } }));
    const gates = checkGates(compare(costly, BOOT), 'reward', { ...GATES, min_improvement: 0.5 });
    const failed = Object.fromEntries(gates.filter((g) => !g.passed).map((g) => [g.gate, g]));
    expect(Object.keys(failed).sort()).toEqual([
      'ci_lower_above_zero',
      'max_category_regression',
      'max_cost_increase',
      'min_improvement',
    ]);
    expect(failed.max_category_regression!.detail).toContain('math');
    expect(failed.max_cost_increase!.value).toBeCloseTo(3, 5);
  });

  it('computes one-sided exact binomial tails and Holm-adjusted p-values', () => {
    expect(exactBinomialUpper(0, 0)).toBe(1);
    expect(exactBinomialUpper(0, 10)).toBe(1);
    expect(exactBinomialUpper(10, 10)).toBeCloseTo(1 / 1024, 12);
    expect(exactBinomialUpper(8, 10)).toBeCloseTo(56 / 1024, 12); // (45 + 10 + 1) / 1024
    expect(exactBinomialUpper(5, 10)).toBeCloseTo(638 / 1024, 12);
    expect(exactBinomialUpper(11, 10)).toBe(0);
    // sorted 0.01, 0.02, 0.04, 0.5: × 4, × 3, × 2, × 1, each at least the one before
    const adj = holmAdjusted([0.04, 0.5, 0.01, 0.02]);
    [0.08, 0.5, 0.04, 0.06].forEach((x, i) => expect(adj[i]).toBeCloseTo(x, 12));
    expect(holmAdjusted([0.3, 0.3])).toEqual([0.6, 0.6]);
    expect(holmAdjusted([])).toEqual([]);
  });

  /** A category of n tasks, the baseline solving each; the candidate loses the first `lost`, wins none. */
  const category = (name: string, n: number, lost: number): Pair[] =>
    Array.from({ length: n }, (_, i) => ({
      taskId: `${name}${i}`,
      category: name,
      seed: 1,
      baseline: result({ taskHash: `${name}${i}`, reward: 1, success: 1, category: name }),
      candidate: result({
        taskHash: `${name}${i}`,
        reward: i < lost ? 0 : 1,
        success: i < lost ? 0 : 1,
        category: name,
      }),
    }));
  // the category gate's exact test does not use the bootstrap: a few resamples keep the simulation quick
  const categoryGate = (ps: Pair[], over: Partial<typeof GATES> = {}) =>
    checkGates(compare(ps, { ...BOOT, resamples: 50 }), 'success', { ...GATES, ...over }).find(
      (g) => g.gate === 'max_category_regression',
    )!;

  it('gates: a category under category_min_pairs cannot refuse (only without category_significance)', () => {
    const ps = [...pairs(40, 0.3, 5), ...category('small', 4, 4)];
    const gate = categoryGate(ps);
    expect(gate.passed).toBe(true);
    expect(gate.detail).toContain('2 of 3 category(s) tested (1 under 8 pairs cannot refuse)');
    expect(gate.detail).toContain('worst category small -1.0000 [-1.0000, -1.0000] over 4 pair(s), 0 won / 4 lost');
    expect(gate.detail).toContain('too few pairs to test');
    const strict = categoryGate(ps, { category_significance: false });
    expect(strict).toMatchObject({ passed: false, value: -1 });
    expect(strict.detail).toContain('no category loses more than 0.1: small -1.0000');
  });

  it('gates: a large loss refuses after Holm; the same loss is not enough when many categories share alpha', () => {
    const loss = category('lossy', 9, 9); // one-sided p = 2^-9 ≈ 0.00195
    const gate = categoryGate([...pairs(40, 0.3, 5), ...loss]);
    expect(gate).toMatchObject({ passed: false, value: -1 });
    expect(gate.detail).toContain(
      'lossy -1.0000 [-1.0000, -1.0000] over 9 pair(s), 0 won / 9 lost, p 0.002, Holm 0.006',
    );
    // 29 more categories tested beside it: 30 × 2^-9 > 0.05, so the same nine losses are no longer significant
    const crowd = Array.from({ length: 29 }, (_, k) => category(`c${k}`, 8, 0));
    const crowded = categoryGate([...crowd.flat(), ...loss]);
    expect(crowded.passed).toBe(true);
    expect(crowded.detail).toContain('30 of 30 category(s) tested');
    expect(crowded.detail).toContain('Holm 0.059');
  });

  it('gates: an unchanged candidate is refused by the category gate at most alpha of the time (simulated A/A)', () => {
    // 13 categories of 9 pairs whose two sides are independent draws of the same success rate
    const rng = new Rng(11);
    const runs = 300;
    let refused = 0;
    for (let r = 0; r < runs; r++) {
      const ps: Pair[] = [];
      for (let c = 0; c < 13; c++)
        for (let i = 0; i < 9; i++) {
          const rate = 0.2 + 0.05 * c;
          const b = rng.next() < rate ? 1 : 0;
          const k = rng.next() < rate ? 1 : 0;
          const id = `c${c}t${i}`;
          ps.push({
            taskId: id,
            category: `c${c}`,
            seed: 1,
            baseline: result({ taskHash: id, reward: b, success: b, category: `c${c}` }),
            candidate: result({ taskHash: id, reward: k, success: k, category: `c${c}` }),
          });
        }
      if (!categoryGate(ps, { max_category_regression: 0 }).passed) refused++;
    }
    expect(refused / runs).toBeLessThanOrEqual(0.05);
  });
});
