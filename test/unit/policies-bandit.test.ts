import { describe, expect, it } from 'vitest';
import {
  act,
  fit,
  meanRewards,
  newPolicy,
  probabilities,
  update,
  type PolicyAlgorithm,
} from '../../src/policies/index.js';
import { Rng } from '../../src/tasks/prng.js';

// 3 arms, 2 context types, Bernoulli rewards with known means: arm 0 is best for type A, arm 2 for type B.
// The context also carries an irrelevant uniform feature, so "contexts" are many distinct vectors.
const MEANS = [
  [0.8, 0.5, 0.2],
  [0.15, 0.45, 0.85],
];
const ROUNDS = 600;
const FEATURES = ['bias', 'type_b', 'noise'];
const context = (rng: Rng) => {
  const type = rng.next() < 0.5 ? 0 : 1;
  return { type, x: [1, type, rng.next()] };
};
const best = (means: number[]) => means.indexOf(Math.max(...means));

/** Runs a learner online with act + update; `sign` -1 feeds it negated rewards (what a sign bug in the update does). */
function online(algorithm: PolicyAlgorithm, sign = 1) {
  const contextFree = algorithm === 'beta';
  const meansOf = (type: number) => (contextFree ? MEANS[0]! : MEANS[type]!);
  const p = newPolicy('routing', algorithm, ['a', 'b', 'c'], FEATURES);
  const rng = new Rng(7);
  let regret = 0;
  for (let t = 0; t < ROUNDS; t++) {
    const { type, x } = context(rng);
    const means = meansOf(type);
    const d = act(p, x, { epsilon: 0.05, explore: true, seed: 1000 + t });
    regret += Math.max(...means) - means[d.arm]!; // pseudo-regret: expected loss of the arm chosen
    const reward = rng.next() < means[d.arm]! ? 1 : 0;
    update(p, x, d.arm, sign * reward);
  }
  const held = new Rng(99);
  let correct = 0;
  const CONTEXTS = 200;
  for (let i = 0; i < CONTEXTS; i++) {
    const { type, x } = context(held);
    const greedy = probabilities(p, x, { epsilon: 0, explore: false, seed: i });
    if (greedy[best(meansOf(type))] === 1) correct++;
  }
  return { p, regret, greedyAccuracy: correct / CONTEXTS };
}

// A uniform learner's expected regret over 600 rounds is ~200 (contextual) and 180 (context-free).
describe('bandit learners on a synthetic contextual environment (600 rounds)', () => {
  it.each([
    ['linucb', 80],
    ['thompson', 80],
    ['beta', 50], // context-free: one best arm overall (arm 0 of type A's means)
  ] as const)('%s picks the best arm greedily in >= 90%% of contexts with regret below %d', (algorithm, bound) => {
    const { regret, greedyAccuracy, p } = online(algorithm);
    expect(greedyAccuracy).toBeGreaterThanOrEqual(0.9);
    expect(regret).toBeLessThan(bound);
    expect(p.state.reduce((s, a) => s + a.n, 0)).toBe(ROUNDS);
  });

  it.each(['linucb', 'thompson', 'beta'] as const)(
    'the same harness rejects %s when it learns from negated rewards',
    (algorithm) => {
      const { regret, greedyAccuracy } = online(algorithm, -1);
      expect(greedyAccuracy).toBeLessThan(0.9);
      expect(regret).toBeGreaterThan(algorithm === 'beta' ? 50 : 80);
    },
  );
});

describe('update, fit and meanRewards', () => {
  it('computes the ridge posterior mean and the LinUCB bonus by hand on one feature', () => {
    const p = newPolicy('tool', 'linucb', ['no', 'yes'], ['x'], { alpha: 1, lambda: 1 });
    update(p, [2], 1, 3); // A = 1 + 4 = 5, b = 6, θ = 1.2
    expect(p.state[1]).toEqual({ A: [[5]], b: [6], n: 1, sum: 3 });
    expect(meanRewards(p, [1])).toEqual([0, 1.2]);
    const q = newPolicy('tool', 'linucb', ['no', 'yes'], ['x'], { alpha: 1, lambda: 1 });
    for (let i = 0; i < 9; i++) update(q, [1], 1, 0.5); // A = 10, θ = 0.45, bonus sqrt(1/10) ≈ 0.32
    expect(meanRewards(q, [1])[1]).toBeCloseTo(0.45, 12);
    // Greedy takes the known 0.45; LinUCB takes the untried arm (0 + 1·sqrt(1/1) = 1 > 0.77).
    expect(probabilities(q, [1], { epsilon: 0, explore: false, seed: 1 })).toEqual([0, 1]);
    expect(probabilities(q, [1], { epsilon: 0, explore: true, seed: 1 })).toEqual([1, 0]);
    // With an ε floor of 0.2 over 2 arms, the chosen arm keeps 0.8 + 0.1.
    const floored = probabilities(q, [1], { epsilon: 0.2, explore: true, seed: 1 });
    expect(floored[0]).toBeCloseTo(0.9, 12);
    expect(floored[1]).toBeCloseTo(0.1, 12);
  });

  it('beta: rewards are clipped to [0, 1] and counted as fractional successes', () => {
    const p = newPolicy('delegate', 'beta', ['self', 'delegate'], []);
    update(p, [], 0, 0.3);
    update(p, [], 0, 1.5);
    update(p, [], 1, -2);
    expect(p.state[0]!).toEqual({ successes: 1.3, failures: 0.7, n: 2 });
    expect(p.state[1]!).toEqual({ successes: 0, failures: 1, n: 1 });
    expect(meanRewards(p, [])).toEqual([(1.3 + 1) / (2 + 2), 1 / 3]);
  });

  it('fit returns an updated copy and leaves the policy it was given alone', () => {
    const p = newPolicy('routing', 'thompson', ['a', 'b'], ['bias', 'x']);
    const before = JSON.stringify(p);
    const q = fit(p, [
      { x: [1, 0], arm: 0, reward: 1 },
      { x: [1, 1], arm: 1, reward: 0.5 },
    ]);
    expect(JSON.stringify(p)).toBe(before);
    expect(q.state.map((s) => s.n)).toEqual([1, 1]);
    expect(meanRewards(q, [1, 0])[0]).toBeGreaterThan(0);
  });

  it('rejects a context of the wrong size, an unknown arm and a non-finite reward, naming them', () => {
    const p = newPolicy('stop', 'linucb', ['continue', 'stop'], ['bias', 'round']);
    expect(() => update(p, [1], 0, 1)).toThrow(/context has 1 features, the policy expects 2 \(bias, round\)/);
    expect(() => update(p, [1, 0], 2, 1)).toThrow(/arm 2 is not one of its 2 arms \(continue, stop\)/);
    expect(() => update(p, [1, 0], 0, NaN)).toThrow(/reward NaN/);
    expect(() => meanRewards(p, [1, Infinity])).toThrow(/feature round is Infinity/);
  });
});
