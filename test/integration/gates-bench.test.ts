// The gates benchmark's analysis (bench/lib/gate-rates.mjs, on the built gates): A/A comparisons from seeds, a planted
// regression, the old category rule beside the current one, and exact intervals for the rates it reports.
import { describe, expect, it } from 'vitest';
// @ts-expect-error bench/ is plain ESM JavaScript without type declarations
import { aaPairs, bySeed, drawnPairs, judge, plant, rate, seedPairs } from '../../bench/lib/gate-rates.mjs';
import { deploySchema } from '../../src/config/sections/deploy.js';
import type { EvalResult } from '../../src/store/index.js';
import { Rng } from '../../src/tasks/prng.js';

// the deploy gates as the embedded defaults set them
const GATES = deploySchema.parse({}).gates;
const BOOT = { resamples: 500, confidence: 0.95, seed: 1 };

const result = (taskId: string, category: string, seed: number, success: number, reward: number): EvalResult => ({
  servingHash: 's',
  setId: 's',
  taskHash: taskId,
  seed,
  settingsHash: 'x',
  taskId,
  category,
  rolloutId: null,
  evalRunId: null,
  status: 'completed',
  reward,
  success,
  consensus: true,
  rounds: 1,
  tokens: 100,
  wallMs: 1,
});

/** Two categories of ten tasks under three seeds; `a` is solved on every seed, `b` on none (reward 0.3 or 0.2). */
const measured = [1, 2, 3].flatMap((seed) =>
  Array.from({ length: 10 }, (_, i) => [
    result(`a${i}`, 'a', seed, 1, 2),
    result(`b${i}`, 'b', seed, 0, seed === 1 ? 0.2 : 0.3),
  ]).flat(),
);

describe('the gates benchmark analysis', () => {
  it('makes every ordered pair of seeds an A/A comparison, task by task', () => {
    expect(seedPairs([1, 2, 3])).toEqual([
      [1, 2],
      [1, 3],
      [2, 1],
      [2, 3],
      [3, 1],
      [3, 2],
    ]);
    const tasks = bySeed(measured, [1, 2, 3]);
    expect(tasks).toHaveLength(20);
    expect(
      bySeed(
        measured.filter((r) => !(r.taskId === 'a0' && r.seed === 2)),
        [1, 2, 3],
      ),
    ).toHaveLength(19);
    // drawn per task: two distinct seeds, both orders and every seed turning up
    const drawn = drawnPairs(tasks, [1, 2, 3], new Rng(3));
    expect(
      drawn.every((p: { baseline: EvalResult; candidate: EvalResult }) => p.baseline.seed !== p.candidate.seed),
    ).toBe(true);
    expect(new Set(drawn.map((p: { baseline: EvalResult }) => p.baseline.seed))).toEqual(new Set([1, 2, 3]));
    const pairs = aaPairs(tasks, 1, 3);
    expect(pairs[0]).toMatchObject({ taskId: 'a0', baseline: { seed: 1 }, candidate: { seed: 3 } });
  });

  it("plants a regression: the candidate fails one category's tasks at a wrong answer's reward", () => {
    const tasks = bySeed(measured, [1, 2, 3]);
    const planted = plant(aaPairs(tasks, 2, 3), 'a', tasks);
    const a = planted.filter((p: { category: string }) => p.category === 'a');
    // no run of `a` failed: the category's lowest failed reward, none either, so 0
    expect(a.every((p: { candidate: EvalResult }) => p.candidate.success === 0 && p.candidate.reward === 0)).toBe(true);
    const b = plant(aaPairs(tasks, 2, 3), 'b', tasks).filter((p: { category: string }) => p.category === 'b');
    expect(b.map((p: { candidate: EvalResult }) => p.candidate.reward)).toEqual(Array(10).fill(0.2));

    const aa = judge(aaPairs(tasks, 2, 3), 'reward', GATES, BOOT);
    expect(aa).toMatchObject({ promoted: false, category: false, categoryOld: false, ciLower: false });
    const caught = judge(planted, 'reward', GATES, BOOT);
    expect(caught).toMatchObject({ category: true, categoryOld: true });
  });

  it('reports each rate with its exact 95 % interval', () => {
    const r = rate(1, 20);
    expect(r).toMatchObject({ k: 1, n: 20, rate: 0.05, low: expect.any(Number), high: expect.any(Number) });
    expect(r.low).toBeCloseTo(0.00127, 4); // Clopper–Pearson, as tables give it
    expect(r.high).toBeCloseTo(0.2487, 3);
    expect(rate(0, 20)).toMatchObject({ low: 0 });
    expect(rate(0, 20).high).toBeCloseTo(0.1684, 3);
    expect(rate(20, 20)).toMatchObject({ high: 1 });
    // hundreds of trials: the binomial terms underflow unless summed in log space
    const big = rate(545, 700);
    expect(big.low).toBeCloseTo(0.746, 3);
    expect(big.high).toBeCloseTo(0.8088, 3);
  });
});
