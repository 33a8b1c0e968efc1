import { quantileSorted } from 'simple-statistics';
import { Rng } from '../tasks/prng.js';
import { fit, meanRewards, newPolicy, probabilities } from './bandit.js';
import type { PolicySpec } from './types.js';

export interface LoggedStep {
  x: number[];
  arm: number;
  propensity: number;
}
/** One rollout: its decisions of one policy kind in order, and its final reward. */
export interface LoggedTrajectory {
  steps: LoggedStep[];
  reward: number;
}
export interface Interval {
  mean: number;
  low: number;
  high: number;
}
export type TargetPolicy = (x: number[]) => number[];
export type RewardModel = (x: number[]) => number[];
export interface OpeOptions {
  rewardModel?: RewardModel;
  resamples?: number;
  confidence?: number;
  seed?: number;
}
export interface OpeResult {
  n: number;
  /** The mean observed reward of the logging policy. */
  logged: Interval;
  ips: Interval;
  snips: Interval;
  dr: Interval;
  /** (Σw)² / Σw² over trajectories' importance weights. */
  effectiveSampleSize: number;
  maxWeight: number;
}

const NONE: Interval = { mean: NaN, low: NaN, high: NaN };

/** The posterior means of a policy, as a reward model for the doubly-robust estimate. */
export const rewardModelFrom =
  (p: PolicySpec): RewardModel =>
  (x) =>
    meanRewards(p, x);

/** A policy's action distribution as an OPE target (greedy on its posterior means, with an ε floor, by default 0). */
export const policyTarget =
  (p: PolicySpec, o: { epsilon?: number; explore?: boolean; seed?: number } = {}): TargetPolicy =>
  (x) =>
    probabilities(p, x, { epsilon: o.epsilon ?? 0, explore: o.explore ?? false, seed: o.seed ?? 0 });

/** Per-arm ridge regression of the final reward on each step's context (the DR model when none is given). */
function fittedRewardModel(logged: readonly LoggedTrajectory[], arms: number, dim: number): RewardModel {
  const name = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
  // The kind is only a label here: the ridge statistics are the same for every kind.
  const p = newPolicy('routing', 'linucb', name('arm', arms), name('x', dim));
  return rewardModelFrom(
    fit(
      p,
      logged.flatMap((t) => t.steps.map((s) => ({ x: s.x, arm: s.arm, reward: t.reward }))),
    ),
  );
}

/** Per trajectory: importance weight w = Π π(a|x)/μ(a|x), and the step-wise doubly-robust value (Jiang & Li 2016). */
function perTrajectory(target: TargetPolicy, logged: readonly LoggedTrajectory[], model: RewardModel | undefined) {
  const pis = logged.map((t, i) =>
    t.steps.map((s, j) => {
      const where = `logged trajectory ${i}, step ${j}`;
      if (!(s.propensity > 0 && s.propensity <= 1))
        throw new Error(`${where}: propensity ${s.propensity} is not in (0, 1]`);
      const pi = target(s.x);
      if (!Number.isInteger(s.arm) || s.arm < 0 || s.arm >= pi.length)
        throw new Error(`${where}: arm ${s.arm} is not one of the target's ${pi.length} arms`);
      return pi;
    }),
  );
  const first = logged.find((t) => t.steps.length)?.steps[0];
  const q = model ?? (first ? fittedRewardModel(logged, pis.flat()[0]!.length, first.x.length) : () => []);
  const w = logged.map((t, i) => t.steps.reduce((acc, s, j) => (acc * pis[i]![j]![s.arm]!) / s.propensity, 1));
  const dr = logged.map((t, i) => {
    if (!t.steps.length) return t.reward; // no decision of this kind: the reward does not depend on the policy
    let v = 0;
    for (let j = t.steps.length - 1; j >= 0; j--) {
      const s = t.steps[j]!;
      const pi = pis[i]![j]!;
      const qs = q(s.x);
      const vhat = pi.reduce((acc, pa, a) => acc + pa * qs[a]!, 0);
      const r = j === t.steps.length - 1 ? t.reward : 0;
      v = vhat + (pi[s.arm]! / s.propensity) * (r + v - qs[s.arm]!);
    }
    return v;
  });
  return { w, dr };
}

/** Off-policy estimates of the target's mean reward from logged trajectories, with seeded percentile-bootstrap CIs. */
export function offPolicyEstimate(
  target: TargetPolicy,
  logged: readonly LoggedTrajectory[],
  o: OpeOptions = {},
): OpeResult {
  const n = logged.length;
  const resamples = o.resamples ?? 1000;
  const confidence = o.confidence ?? 0.95;
  if (!Number.isInteger(resamples) || resamples < 1)
    throw new Error(`resamples must be a positive integer, got ${resamples}`);
  if (!(confidence > 0 && confidence < 1)) throw new Error(`confidence must be in (0, 1), got ${confidence}`);
  if (!n) return { n: 0, logged: NONE, ips: NONE, snips: NONE, dr: NONE, effectiveSampleSize: 0, maxWeight: 0 };
  const r = logged.map((t, i) => {
    if (!Number.isFinite(t.reward))
      throw new Error(`logged trajectory ${i}: reward ${t.reward} is not a finite number`);
    return t.reward;
  });
  const { w, dr } = perTrajectory(target, logged, o.rewardModel);
  // The four estimates of one sample (indices into the trajectories); SNIPS is NaN when every weight is 0.
  const estimates = (idx: readonly number[]) => {
    let sr = 0,
      swr = 0,
      sw = 0,
      sdr = 0;
    for (const i of idx) {
      sr += r[i]!;
      swr += w[i]! * r[i]!;
      sw += w[i]!;
      sdr += dr[i]!;
    }
    const m = idx.length;
    return [sr / m, swr / m, sw > 0 ? swr / sw : NaN, sdr / m];
  };
  const point = estimates(logged.map((_, i) => i));
  const rng = new Rng(o.seed ?? 1);
  const boot: number[][] = [[], [], [], []];
  const idx = new Array<number>(n);
  for (let b = 0; b < resamples; b++) {
    for (let i = 0; i < n; i++) idx[i] = Math.floor(rng.next() * n);
    estimates(idx).forEach((v, k) => {
      if (Number.isFinite(v)) boot[k]!.push(v);
    });
  }
  const tail = (1 - confidence) / 2;
  const interval = (k: number): Interval => {
    const sorted = boot[k]!.sort((a, b) => a - b);
    if (!sorted.length || !Number.isFinite(point[k]!)) return { mean: point[k]!, low: NaN, high: NaN };
    return { mean: point[k]!, low: quantileSorted(sorted, tail), high: quantileSorted(sorted, 1 - tail) };
  };
  const sw = w.reduce((a, b) => a + b, 0);
  const sw2 = w.reduce((a, b) => a + b * b, 0);
  return {
    n,
    logged: interval(0),
    ips: interval(1),
    snips: interval(2),
    dr: interval(3),
    effectiveSampleSize: sw2 > 0 ? (sw * sw) / sw2 : 0,
    maxWeight: w.reduce((a, b) => Math.max(a, b), 0),
  };
}
