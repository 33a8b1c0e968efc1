import { mean, quantileSorted } from 'simple-statistics';
import { Rng } from '../tasks/prng.js';

export interface Interval {
  mean: number;
  low: number;
  high: number;
  level: number;
  resamples: number;
}

export interface BootstrapOptions {
  resamples: number;
  confidence: number;
  seed: number;
}

/**
 * Paired-bootstrap confidence interval of the mean of paired differences: the pairs are resampled
 * with replacement (seeded, so the same data give the same interval), percentile method.
 */
export function pairedBootstrap(diffs: readonly number[], opts: BootstrapOptions): Interval {
  const n = diffs.length;
  const level = opts.confidence;
  if (n === 0) return { mean: Number.NaN, low: Number.NaN, high: Number.NaN, level, resamples: 0 };
  const m = mean([...diffs]);
  if (n === 1) return { mean: m, low: m, high: m, level, resamples: opts.resamples };
  const rng = new Rng(opts.seed);
  const means = new Float64Array(opts.resamples);
  for (let r = 0; r < opts.resamples; r++) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += diffs[Math.floor(rng.next() * n)]!;
    means[r] = sum / n;
  }
  means.sort();
  const sorted = Array.from(means);
  const tail = (1 - level) / 2;
  return {
    mean: m,
    low: quantileSorted(sorted, tail),
    high: quantileSorted(sorted, 1 - tail),
    level,
    resamples: opts.resamples,
  };
}

/**
 * Two-sided exact binomial test of k successes in n trials at p = 1/2: the sign test on wins and
 * losses (ties dropped), and the exact McNemar test on discordant pairs. 1 when n is 0.
 */
export function exactBinomialTwoSided(k: number, n: number): number {
  if (n === 0) return 1;
  // the distribution is symmetric: the smaller tail, doubled
  return Math.min(1, 2 * lowerTailAtHalf(Math.min(k, n - k), n));
}

/** One-sided exact binomial test at p = 1/2: the probability of k or more successes in n trials. 1 when n is 0. */
export function exactBinomialUpper(k: number, n: number): number {
  if (n === 0 || k <= 0) return 1;
  if (k > n) return 0;
  // P(X ≥ k) = P(X ≤ n − k) by symmetry
  return Math.min(1, lowerTailAtHalf(n - k, n));
}

/** P(X ≤ m) for X ~ Binomial(n, 1/2): log C(n, i) − n log 2, summed for i = 0 … m. */
function lowerTailAtHalf(m: number, n: number): number {
  let logTerm = -n * Math.LN2;
  let tail = Math.exp(logTerm);
  for (let i = 1; i <= m; i++) {
    logTerm += Math.log(n - i + 1) - Math.log(i);
    tail += Math.exp(logTerm);
  }
  return tail;
}

/**
 * Holm's step-down adjustment of p-values tested together: the family-wise error rate stays at alpha whatever
 * the dependence between the tests. Adjusted values come back in the order given.
 */
export function holmAdjusted(pValues: readonly number[]): number[] {
  const m = pValues.length;
  const order = pValues.map((p, i) => ({ p, i })).sort((a, b) => a.p - b.p);
  const adjusted = new Array<number>(m);
  let running = 0;
  order.forEach(({ p, i }, rank) => {
    running = Math.max(running, Math.min(1, (m - rank) * p));
    adjusted[i] = running;
  });
  return adjusted;
}

export interface PairedCounts {
  wins: number;
  ties: number;
  losses: number;
}

/** Wins, ties and losses of candidate over baseline, pair by pair (a difference within eps is a tie). */
export function winTieLoss(diffs: readonly number[], eps = 1e-9): PairedCounts {
  const c = { wins: 0, ties: 0, losses: 0 };
  for (const d of diffs) {
    if (d > eps) c.wins++;
    else if (d < -eps) c.losses++;
    else c.ties++;
  }
  return c;
}
