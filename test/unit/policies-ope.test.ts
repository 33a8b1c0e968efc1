import { describe, expect, it } from 'vitest';
import {
  fit,
  newPolicy,
  offPolicyEstimate,
  policyTarget,
  probabilities,
  rewardModelFrom,
  type Interval,
  type LoggedTrajectory,
} from '../../src/policies/index.js';
import { Rng } from '../../src/tasks/prng.js';

const draw = (rng: Rng, probs: readonly number[]) => {
  let u = rng.next();
  for (let i = 0; i < probs.length; i++) if ((u -= probs[i]!) < 0) return i;
  return probs.length - 1;
};
const covers = (i: Interval, v: number) => i.low <= v && v <= i.high;
const width = (i: Interval) => i.high - i.low;

// One-step environment: 2 context types, 3 arms, Bernoulli rewards with known means, a known stochastic logging policy.
const MEANS = [
  [0.8, 0.5, 0.2],
  [0.15, 0.45, 0.85],
];
const LOGGING = [
  [0.6, 0.3, 0.1],
  [0.2, 0.3, 0.5],
];
const TARGET_ARM = [1, 0]; // deterministic, and far from what the logging policy prefers
const banditTarget = (x: number[]) => [0, 1, 2].map((a) => (a === TARGET_ARM[x[1]!] ? 1 : 0));
const BANDIT_TRUTH = 0.5 * MEANS[0]![TARGET_ARM[0]!]! + 0.5 * MEANS[1]![TARGET_ARM[1]!]!; // 0.325; logging earns 0.62

/** `trustPropensities: false` logs propensity 1 everywhere: what an estimator that ignores propensities computes. */
function banditLogs(n: number, seed: number, trustPropensities = true): LoggedTrajectory[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => {
    const type = rng.next() < 0.5 ? 0 : 1;
    const arm = draw(rng, LOGGING[type]!);
    const reward = rng.next() < MEANS[type]![arm]! ? 1 : 0;
    return { steps: [{ x: [1, type], arm, propensity: trustPropensities ? LOGGING[type]![arm]! : 1 }], reward };
  });
}

// Three-step environment: state s ∈ {0, 1} (s₀ fair coin), arms {0, 1}; the next state is 1 with probability 0.7 after
// arm 1 and 0.3 after arm 0; the final reward is Bernoulli(0.2 + 0.25·#{t: s_t = 1 and a_t = 1}), given only at the end.
const STEPS = 3;
const trajLogging = (s: number) => (s === 1 ? [0.4, 0.6] : [0.7, 0.3]);
const trajTarget = (x: number[]) => (x[1] === 1 ? [0, 1] : [1, 0]); // play the arm equal to the state
const TRAJ_TRUTH = (() => {
  const v = (t: number, s: number, hits: number): number => {
    if (t === STEPS) return 0.2 + 0.25 * hits;
    const up = s === 1 ? 0.7 : 0.3; // the target plays a = s
    return up * v(t + 1, 1, hits + s) + (1 - up) * v(t + 1, 0, hits + s);
  };
  return 0.5 * v(0, 0, 0) + 0.5 * v(0, 1, 0);
})(); // 0.575

function trajectoryLogs(n: number, seed: number, trustPropensities = true): LoggedTrajectory[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => {
    let s = rng.next() < 0.5 ? 1 : 0;
    let hits = 0;
    const steps = [];
    for (let t = 0; t < STEPS; t++) {
      const mu = trajLogging(s);
      const arm = draw(rng, mu);
      steps.push({ x: [1, s, t / 2], arm, propensity: trustPropensities ? mu[arm]! : 1 });
      if (arm === 1 && s === 1) hits++;
      s = rng.next() < (arm === 1 ? 0.7 : 0.3) ? 1 : 0;
    }
    return { steps, reward: rng.next() < 0.2 + 0.25 * hits ? 1 : 0 };
  });
}

describe('off-policy estimates cover the true value of a greedy target', () => {
  it('one-step: IPS, SNIPS and DR 95% CIs cover it, DR narrower than IPS; the logging mean does not', () => {
    const r = offPolicyEstimate(banditTarget, banditLogs(2000, 1), { seed: 3 });
    expect(r.n).toBe(2000);
    for (const k of ['ips', 'snips', 'dr'] as const)
      expect(covers(r[k], BANDIT_TRUTH), `${k} ${JSON.stringify(r[k])}`).toBe(true);
    expect(width(r.dr)).toBeLessThan(width(r.ips));
    expect(covers(r.logged, BANDIT_TRUTH)).toBe(false);
    expect(r.logged.mean).toBeGreaterThan(0.55);
    expect(r.maxWeight).toBe(5); // 1 / μ(arm 0 | type B)
    expect(r.effectiveSampleSize).toBeGreaterThan(300);
    expect(r.effectiveSampleSize).toBeLessThan(2000);
  });

  it('the three-step truth agrees with running the target itself', () => {
    const rng = new Rng(5);
    let total = 0;
    const N = 200_000;
    for (let e = 0; e < N; e++) {
      let s = rng.next() < 0.5 ? 1 : 0;
      let hits = 0;
      for (let t = 0; t < STEPS; t++) {
        const arm = draw(rng, trajTarget([1, s, t / 2]));
        if (arm === 1 && s === 1) hits++;
        s = rng.next() < (arm === 1 ? 0.7 : 0.3) ? 1 : 0;
      }
      total += rng.next() < 0.2 + 0.25 * hits ? 1 : 0;
    }
    expect(Math.abs(total / N - TRAJ_TRUTH)).toBeLessThan(0.005);
  });

  it('three-step trajectories: all three cover it and DR is narrower than IPS', () => {
    const r = offPolicyEstimate(trajTarget, trajectoryLogs(2000, 1), { seed: 4 });
    for (const k of ['ips', 'snips', 'dr'] as const)
      expect(covers(r[k], TRAJ_TRUTH), `${k} ${JSON.stringify(r[k])}`).toBe(true);
    expect(width(r.dr)).toBeLessThan(width(r.ips));
  });

  it('the CIs are calibrated: over 20 independent logs of each environment, each covers the truth at least 17 times', () => {
    for (const [logs, target, truth] of [
      [banditLogs, banditTarget, BANDIT_TRUTH],
      [trajectoryLogs, trajTarget, TRAJ_TRUTH],
    ] as const) {
      const hits = { ips: 0, snips: 0, dr: 0 };
      for (let rep = 0; rep < 20; rep++) {
        const r = offPolicyEstimate(target, logs(1000, 100 + rep), { seed: rep, resamples: 400 });
        for (const k of ['ips', 'snips', 'dr'] as const) if (covers(r[k], truth)) hits[k]++;
      }
      for (const k of ['ips', 'snips', 'dr'] as const) expect(hits[k], k).toBeGreaterThanOrEqual(17);
    }
  });

  it('an estimator that ignores propensities misses the truth in both environments', () => {
    expect(covers(offPolicyEstimate(banditTarget, banditLogs(2000, 1, false), { seed: 3 }).ips, BANDIT_TRUTH)).toBe(
      false,
    );
    const traj = offPolicyEstimate(trajTarget, trajectoryLogs(2000, 2, false), { seed: 4 });
    expect(covers(traj.ips, TRAJ_TRUTH)).toBe(false);
    expect(covers(traj.dr, TRAJ_TRUTH)).toBe(false);
  });

  it('DR is doubly robust: a wrong reward model with right propensities still covers; wrong both does not', () => {
    const wrong = () => [0.5, 0.5, 0.5];
    expect(
      covers(offPolicyEstimate(banditTarget, banditLogs(2000, 1), { rewardModel: wrong, seed: 3 }).dr, BANDIT_TRUTH),
    ).toBe(true);
    expect(
      covers(
        offPolicyEstimate(banditTarget, banditLogs(2000, 1, false), { rewardModel: wrong, seed: 3 }).dr,
        BANDIT_TRUTH,
      ),
    ).toBe(false);
    // The true model makes DR tighter still.
    const truth = (x: number[]) => MEANS[x[1]!]!;
    const exact = offPolicyEstimate(banditTarget, banditLogs(2000, 1), { rewardModel: truth, seed: 3 });
    expect(covers(exact.dr, BANDIT_TRUTH)).toBe(true);
    expect(width(exact.dr)).toBeLessThan(width(exact.ips));
  });
});

describe('offPolicyEstimate by hand and at the edges', () => {
  it('computes IPS, SNIPS and the step-wise DR of one two-step trajectory exactly', () => {
    const logged = [
      {
        steps: [
          { x: [1], arm: 0, propensity: 0.5 },
          { x: [2], arm: 1, propensity: 0.25 },
        ],
        reward: 1,
      },
    ];
    const r = offPolicyEstimate(() => [0.2, 0.8], logged, {
      rewardModel: (x) => [0.1 * x[0]!, 0.3 * x[0]!],
      resamples: 10,
    });
    // ρ = 0.4 then 3.2; V₂ = 0.52 + 3.2·(1 − 0.6) = 1.8; V₁ = 0.26 + 0.4·(1.8 − 0.1) = 0.94.
    expect(r.ips.mean).toBeCloseTo(1.28, 12);
    expect(r.snips.mean).toBeCloseTo(1, 12);
    expect(r.dr.mean).toBeCloseTo(0.94, 12);
    expect(r.maxWeight).toBeCloseTo(1.28, 12);
    expect(r.effectiveSampleSize).toBeCloseTo(1, 12);
  });

  it('is deterministic for a seed and reports NaN intervals with no data', () => {
    const logs = banditLogs(300, 5);
    expect(offPolicyEstimate(banditTarget, logs, { seed: 9 })).toEqual(
      offPolicyEstimate(banditTarget, logs, { seed: 9 }),
    );
    expect(offPolicyEstimate(banditTarget, logs, { seed: 9 }).ips).not.toEqual(
      offPolicyEstimate(banditTarget, logs, { seed: 10 }).ips,
    );
    const none = offPolicyEstimate(banditTarget, []);
    expect(none.n).toBe(0);
    for (const k of ['logged', 'ips', 'snips', 'dr'] as const)
      expect(Object.values(none[k]).every(Number.isNaN)).toBe(true);
    expect(none.effectiveSampleSize).toBe(0);
  });

  it('handles a target that never agrees with the log (all weights 0): IPS 0, SNIPS undefined', () => {
    const logs: LoggedTrajectory[] = [0, 1, 0].map((r) => ({
      steps: [{ x: [1, 0], arm: 0, propensity: 0.5 }],
      reward: r,
    }));
    const r = offPolicyEstimate(() => [0, 1, 0], logs, { seed: 1, resamples: 50 });
    expect(r.ips).toEqual({ mean: 0, low: 0, high: 0 });
    expect(r.snips.mean).toBeNaN();
    expect(r.snips.low).toBeNaN();
    expect(r.effectiveSampleSize).toBe(0);
    expect(r.maxWeight).toBe(0);
  });

  it('rejects a logged propensity outside (0, 1] or an arm the target does not have, naming the trajectory and step', () => {
    const bad = [
      { steps: [{ x: [1, 0], arm: 0, propensity: 0.5 }], reward: 1 },
      { steps: [{ x: [1, 0], arm: 0, propensity: 0 }], reward: 1 },
    ];
    expect(() => offPolicyEstimate(banditTarget, bad)).toThrow(
      /logged trajectory 1, step 0: propensity 0 is not in \(0, 1\]/,
    );
    expect(() =>
      offPolicyEstimate(banditTarget, [{ steps: [{ x: [1, 0], arm: 3, propensity: 1 }], reward: 1 }]),
    ).toThrow(/arm 3 is not one of the target's 3 arms/);
  });

  it('policyTarget and rewardModelFrom turn a fitted policy into a greedy target and a reward model', () => {
    const logs = banditLogs(2000, 1);
    const p = fit(
      newPolicy('routing', 'linucb', ['a', 'b', 'c'], ['bias', 'type_b']),
      logs.map((t) => ({ ...t.steps[0]!, reward: t.reward })),
    );
    const target = policyTarget(p);
    expect(target([1, 0])).toEqual([1, 0, 0]);
    expect(target([1, 1])).toEqual([0, 0, 1]);
    expect(target([1, 1])).toEqual(probabilities(p, [1, 1], { epsilon: 0, explore: false, seed: 0 }));
    expect(rewardModelFrom(p)([1, 0])[0]).toBeCloseTo(0.8, 1);
    // The greedy target's true value is 0.5·0.8 + 0.5·0.85 = 0.825.
    expect(covers(offPolicyEstimate(target, logs, { rewardModel: rewardModelFrom(p), seed: 2 }).dr, 0.825)).toBe(true);
  });
});
