import { Rng } from '../tasks/prng.js';
import { posterior, ridgePrior } from './linalg.js';
import { argmax, betaDraw, categorical, dot, gaussian } from './sampling.js';
import {
  isLinearState,
  parsePolicy,
  type BetaArmState,
  type LinearArmState,
  type PolicyAlgorithm,
  type PolicyKind,
  type PolicySpec,
} from './types.js';

export interface PolicyOptions {
  alpha?: number;
  lambda?: number;
  noise?: number;
  epsilon?: number;
}
export interface ActOptions {
  epsilon: number;
  explore: boolean;
  seed: number;
}
export interface Decision {
  arm: number;
  propensity: number;
  probabilities: number[];
}
export interface Sample {
  x: number[];
  arm: number;
  reward: number;
}

/** Monte Carlo draws behind a Thompson policy's action probabilities. */
export const THOMPSON_DRAWS = 256;

export function newPolicy(
  kind: PolicyKind,
  algorithm: PolicyAlgorithm,
  arms: string[],
  features: string[],
  opts: PolicyOptions = {},
): PolicySpec {
  const lambda = opts.lambda ?? 1;
  const state = arms.map(() =>
    algorithm === 'beta'
      ? { successes: 0, failures: 0, n: 0 }
      : { A: ridgePrior(features.length, lambda), b: new Array<number>(features.length).fill(0), n: 0, sum: 0 },
  );
  // Through the schema, so a bad argument fails here with the field's name rather than later.
  return parsePolicy({
    format: 1,
    kind,
    algorithm,
    arms: [...arms],
    features: [...features],
    alpha: opts.alpha ?? 1,
    lambda,
    noise: opts.noise ?? 0.5,
    epsilon: opts.epsilon ?? 0.1,
    state,
  });
}

const clip01 = (r: number) => Math.min(1, Math.max(0, r));

function checkArm(p: PolicySpec, arm: number): void {
  if (!Number.isInteger(arm) || arm < 0 || arm >= p.arms.length) {
    throw new Error(`${p.kind} policy: arm ${arm} is not one of its ${p.arms.length} arms (${p.arms.join(', ')})`);
  }
}

function checkContext(p: PolicySpec, x: readonly number[]): void {
  if (p.algorithm === 'beta') return; // context-free
  if (x.length !== p.features.length) {
    throw new Error(
      `${p.kind} policy: the context has ${x.length} features, the policy expects ${p.features.length} (${p.features.join(', ')})`,
    );
  }
  const bad = x.findIndex((v) => !Number.isFinite(v));
  if (bad >= 0) throw new Error(`${p.kind} policy: feature ${p.features[bad]} is ${x[bad]}, not a finite number`);
}

/** Adds one observation to the arm's statistics (mutates p). */
export function update(p: PolicySpec, x: number[], arm: number, reward: number): void {
  checkArm(p, arm);
  checkContext(p, x);
  if (!Number.isFinite(reward)) throw new Error(`${p.kind} policy: reward ${reward} is not a finite number`);
  const s = p.state[arm]!;
  if (isLinearState(s)) {
    for (let i = 0; i < x.length; i++) {
      for (let j = 0; j < x.length; j++) s.A[i]![j]! += x[i]! * x[j]!;
      s.b[i]! += reward * x[i]!;
    }
    s.sum += reward;
  } else {
    const c = clip01(reward);
    s.successes += c;
    s.failures += 1 - c;
  }
  s.n += 1;
}

/** A copy of p updated with every sample, in order. */
export function fit(p: PolicySpec, data: readonly Sample[]): PolicySpec {
  const copy = structuredClone(p);
  for (const d of data) update(copy, d.x, d.arm, d.reward);
  return copy;
}

const posteriors = (p: PolicySpec) =>
  p.state.map((s, a) => posterior(s as LinearArmState, `${p.kind} policy, arm ${p.arms[a]}`));

/** Posterior mean reward per arm: θ_a·x, or (s+1)/(s+f+2) for `beta` (the mean of the Beta(1,1)-prior posterior). */
export function meanRewards(p: PolicySpec, x: number[]): number[] {
  checkContext(p, x);
  if (p.algorithm === 'beta')
    return p.state.map((s) => {
      const b = s as BetaArmState;
      return (b.successes + 1) / (b.successes + b.failures + 2);
    });
  return posteriors(p).map((post) => dot(post.theta, x));
}

const oneHot = (k: number, i: number) => Array.from({ length: k }, (_, j) => (j === i ? 1 : 0));

/** The share of seeded posterior draws each arm wins (ties split evenly). */
function thompsonShares(p: PolicySpec, x: number[], seed: number): number[] {
  // A stream of its own, independent of the one act() draws the arm with.
  const rng = new Rng((seed ^ 0x5bd1e995) >>> 0);
  let draw: (a: number) => number;
  if (p.algorithm === 'beta') {
    draw = (a) => {
      const s = p.state[a] as BetaArmState;
      return betaDraw(rng, s.successes + 1, s.failures + 1);
    };
  } else {
    // At one context, θ̃·x for θ̃ ~ N(θ, noise² A⁻¹) is a scalar normal: mean θ·x, sd noise·sqrt(xᵀA⁻¹x).
    const at = posteriors(p).map((post) => ({ mean: dot(post.theta, x), sd: p.noise * post.width(x) }));
    draw = (a) => at[a]!.mean + at[a]!.sd * gaussian(rng);
  }
  const k = p.arms.length;
  const wins = new Array<number>(k).fill(0);
  for (let i = 0; i < THOMPSON_DRAWS; i++) {
    const v = Array.from({ length: k }, (_, a) => draw(a));
    const top = Math.max(...v);
    const winners = v.flatMap((u, a) => (u === top ? [a] : []));
    for (const a of winners) wins[a]! += 1 / winners.length;
  }
  return wins.map((w) => w / THOMPSON_DRAWS);
}

/** The policy's action distribution at x, with every arm at least ε/K. */
export function probabilities(p: PolicySpec, x: number[], o: ActOptions): number[] {
  if (!(o.epsilon >= 0 && o.epsilon <= 1)) throw new Error(`epsilon must be in [0, 1], got ${o.epsilon}`);
  checkContext(p, x);
  const k = p.arms.length;
  let base: number[];
  if (!o.explore) base = oneHot(k, argmax(meanRewards(p, x)));
  else if (p.algorithm === 'linucb')
    base = oneHot(k, argmax(posteriors(p).map((post) => dot(post.theta, x) + p.alpha * post.width(x))));
  else base = thompsonShares(p, x, o.seed);
  return base.map((b) => (1 - o.epsilon) * b + o.epsilon / k);
}

/** One decision: an arm drawn from `probabilities` with an Rng seeded by `seed`, and its propensity. */
export function act(p: PolicySpec, x: number[], o: ActOptions): Decision {
  const probs = probabilities(p, x, o);
  const arm = categorical(new Rng(o.seed), probs);
  return { arm, propensity: probs[arm]!, probabilities: probs };
}

/** The logging policy before any policy exists: each of `arms` equally likely. */
export function uniform(arms: number, seed: number): Decision {
  if (!Number.isInteger(arms) || arms < 1) throw new Error(`uniform needs at least one arm, got ${arms}`);
  const probs = new Array<number>(arms).fill(1 / arms);
  const arm = categorical(new Rng(seed), probs);
  return { arm, propensity: probs[arm]!, probabilities: probs };
}
