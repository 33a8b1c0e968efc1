import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  POLICY_ALGORITHMS,
  THOMPSON_DRAWS,
  act,
  fit,
  newPolicy,
  parsePolicy,
  probabilities,
  serializePolicy,
  uniform,
  update,
  type PolicyAlgorithm,
  type PolicySpec,
} from '../../src/policies/index.js';
import { Rng } from '../../src/tasks/prng.js';

/** A policy of each algorithm with some history, so the distributions are not trivial. */
function trained(algorithm: PolicyAlgorithm): PolicySpec {
  const rng = new Rng(3);
  const data = Array.from({ length: 60 }, () => {
    const x = [1, rng.next(), rng.next()];
    const arm = rng.int(0, 2);
    return { x, arm, reward: arm === 1 ? x[1]! : rng.next() * 0.5 };
  });
  return fit(newPolicy('routing', algorithm, ['a', 'b', 'c'], ['bias', 'f1', 'f2']), data);
}

describe('action probabilities and decisions', () => {
  it.each(POLICY_ALGORITHMS)('%s: the same seed gives the same decision and propensities', (algorithm) => {
    const p = trained(algorithm);
    const o = { epsilon: 0.1, explore: true, seed: 42 };
    const a = act(p, [1, 0.3, 0.6], o);
    expect(act(p, [1, 0.3, 0.6], o)).toEqual(a);
    expect(a.propensity).toBe(a.probabilities[a.arm]);
    // Over seeds the decision varies (the ε floor alone makes every arm possible).
    const arms = new Set(Array.from({ length: 60 }, (_, seed) => act(p, [1, 0.3, 0.6], { ...o, seed }).arm));
    expect(arms.size).toBe(3);
  });

  it('every propensity is at least ε/K and the probabilities sum to 1, for every algorithm, context, seed and ε', () => {
    const policies = Object.fromEntries(POLICY_ALGORITHMS.map((a) => [a, trained(a)]));
    fc.assert(
      fc.property(
        fc.constantFrom(...POLICY_ALGORITHMS),
        fc.tuple(fc.double({ min: -5, max: 5, noNaN: true }), fc.double({ min: -5, max: 5, noNaN: true })),
        fc.integer(),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.boolean(),
        (algorithm, [f1, f2], seed, epsilon, explore) => {
          const probs = probabilities(policies[algorithm]!, [1, f1, f2], { epsilon, explore, seed });
          expect(probs.reduce((s, v) => s + v, 0)).toBeCloseTo(1, 12);
          for (const v of probs) expect(v).toBeGreaterThanOrEqual(epsilon / 3 - 1e-15);
          const d = act(policies[algorithm]!, [1, f1, f2], { epsilon, explore, seed });
          expect(d.propensity).toBeGreaterThanOrEqual(epsilon / 3 - 1e-15);
        },
      ),
      { numRuns: 150, seed: 11 },
    );
  });

  it('Thompson probabilities are shares of 256 seeded draws; explore=false is greedy with ties to the lowest index', () => {
    const fresh = newPolicy('routing', 'thompson', ['a', 'b'], ['bias']);
    // Nothing learned: both arms' posteriors are the same, so each wins about half of the draws.
    const [a, b] = probabilities(fresh, [1], { epsilon: 0, explore: true, seed: 5 });
    expect(a! + b!).toBeCloseTo(1, 12);
    expect(Math.abs(a! - 0.5)).toBeLessThan(0.1);
    expect((a! * THOMPSON_DRAWS) % 1).toBeCloseTo(0, 9);
    expect(probabilities(fresh, [1], { epsilon: 0, explore: false, seed: 5 })).toEqual([1, 0]);
    expect(probabilities(fresh, [1], { epsilon: 0.5, explore: false, seed: 5 })).toEqual([0.75, 0.25]);
  });

  it('uniform logs every arm with propensity 1/K, reproducibly', () => {
    const d = uniform(4, 9);
    expect(d.probabilities).toEqual([0.25, 0.25, 0.25, 0.25]);
    expect(d.propensity).toBe(0.25);
    expect(uniform(4, 9)).toEqual(d);
    expect(new Set(Array.from({ length: 40 }, (_, s) => uniform(4, s).arm)).size).toBe(4);
    expect(() => uniform(0, 1)).toThrow(/at least one arm/);
  });

  it('rejects an ε outside [0, 1]', () => {
    expect(() => probabilities(trained('linucb'), [1, 0, 0], { epsilon: 1.5, explore: true, seed: 1 })).toThrow(
      /epsilon must be in \[0, 1\], got 1.5/,
    );
  });
});

describe('a stored policy', () => {
  it.each(POLICY_ALGORITHMS)('%s: parsePolicy round-trips serializePolicy, which is stable', (algorithm) => {
    const p = { ...trained(algorithm), trained: { rows: 60, z: { b: 1, a: 2 } } };
    const text = serializePolicy(p);
    expect(parsePolicy(JSON.parse(text))).toEqual(p);
    expect(parsePolicy(text)).toEqual(p);
    expect(serializePolicy(parsePolicy(text))).toBe(text);
    const raw = JSON.parse(text) as unknown;
    update(parsePolicy(raw), [1, 1, 1], 0, 1); // the parsed policy owns its state: learning does not touch the input
    expect(JSON.stringify(raw)).toBe(text);
    expect(serializePolicy({ ...p, trained: { z: { a: 2, b: 1 }, rows: 60 } })).toBe(text); // key order does not matter
    expect(newPolicy('stop', algorithm, ['continue', 'stop'], ['bias'])).toMatchObject({
      alpha: 1,
      lambda: 1,
      noise: 0.5,
      epsilon: 0.1,
      format: 1,
    });
  });

  const good = () => JSON.parse(serializePolicy(trained('linucb'))) as Record<string, unknown>;

  it.each([
    [
      'a kind it does not know',
      (p: Record<string, any>) => {
        p.kind = 'route';
      },
      /kind: /,
    ],
    [
      'a negative alpha',
      (p: Record<string, any>) => {
        p.alpha = -1;
      },
      /alpha: /,
    ],
    [
      'an ε above 1',
      (p: Record<string, any>) => {
        p.epsilon = 2;
      },
      /epsilon: /,
    ],
    [
      'a missing arm state',
      (p: Record<string, any>) => {
        p.state.pop();
      },
      /state: expected one state per arm \(3\), got 2/,
    ],
    [
      'an A of the wrong size',
      (p: Record<string, any>) => {
        p.state[1].A.pop();
      },
      /state\[1\]\.A: expected 3 rows/,
    ],
    [
      'a b that is not a number',
      (p: Record<string, any>) => {
        p.state[2].b[0] = 'x';
      },
      /state\[2\]\.b\[0\]: /,
    ],
    [
      'duplicate arms',
      (p: Record<string, any>) => {
        p.arms = ['a', 'a', 'c'];
      },
      /arms: arm names must be distinct/,
    ],
    [
      'beta counts on a linear policy',
      (p: Record<string, any>) => {
        p.state[0] = { successes: 1, failures: 0, n: 1 };
      },
      /state\[0\]\.A: /,
    ],
    [
      'format 2',
      (p: Record<string, any>) => {
        p.format = 2;
      },
      /format: /,
    ],
  ])('rejects %s with a message naming the field', (_what, spoil, message) => {
    const p = good();
    spoil(p);
    expect(() => parsePolicy(p)).toThrow(message);
    expect(() => parsePolicy(p)).toThrow(/^invalid policy: /);
  });

  it('rejects text that is not JSON, and bad arguments to newPolicy', () => {
    expect(() => parsePolicy('{not json')).toThrow(/invalid policy: not JSON/);
    expect(() => newPolicy('stop', 'linucb', [], ['bias'])).toThrow(/arms: /);
    expect(() => newPolicy('stop', 'linucb', ['a', 'b'], [])).toThrow(
      /features: a linucb policy needs at least one feature/,
    );
    expect(() => newPolicy('stop', 'thompson', ['a', 'b'], ['bias'], { lambda: 0 })).toThrow(/lambda: /);
  });
});
