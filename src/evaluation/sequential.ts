import { errorFunction } from 'simple-statistics';

/**
 * Group-sequential boundaries for an evaluation that may look at its pairs more than once (eval.sequential): after
 * each look at another batch of seeds the candidate is promoted, refused or measured on more seeds. Looking again at
 * data that already failed to clear a bar inflates the chance of promoting a candidate no better than production,
 * so each look's bar is raised until the chance over all looks is the one-sided alpha of a single look. The alpha
 * is spent over the looks by a Lan–DeMets spending function; the boundaries follow from the joint distribution of
 * the looks' z statistics (a Brownian motion observed at equally spaced information times), computed on a grid.
 */
export type Spending = 'obrien_fleming' | 'pocock';

const cdf = (z: number) => 0.5 * (1 + errorFunction(z / Math.SQRT2));
const pdf = (z: number) => Math.exp(-0.5 * z * z) / Math.sqrt(2 * Math.PI);

/** The z with P(Z > z) = p, by bisection on Φ. */
export function upperQuantile(p: number): number {
  let lo = -12;
  let hi = 12;
  for (let i = 0; i < 80; i++) {
    const mid = (lo + hi) / 2;
    if (1 - cdf(mid) > p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** The alpha spent by information time t (0 < t ≤ 1): O'Brien–Fleming-type keeps early looks strict, Pocock-type
 * spends more evenly. Both spend exactly alpha at t = 1. */
export function spent(alpha: number, t: number, spending: Spending): number {
  if (t >= 1) return alpha;
  if (spending === 'pocock') return alpha * Math.log(1 + (Math.E - 1) * t);
  return 2 * (1 - cdf(upperQuantile(alpha / 2) / Math.sqrt(t)));
}

const STEP = 0.01;
const GRID = Array.from({ length: 1601 }, (_, i) => -8 + i * STEP);

/**
 * The z boundary of each of `looks` equally spaced looks whose one-sided crossing probability under no difference is
 * `alpha` in all. One look: the usual single-test quantile.
 */
export function boundaries(alpha: number, looks: number, spending: Spending): number[] {
  const bounds: number[] = [];
  // density of the not-yet-crossed path S(t) = Z·√t on the grid
  let density: Float64Array | null = null;
  for (let k = 1; k <= looks; k++) {
    const t = k / looks;
    const target = spent(alpha, t, spending) - (k > 1 ? spent(alpha, (k - 1) / looks, spending) : 0);
    const dt = 1 / looks;
    const prev = density;
    const crossing = (b: number) =>
      prev === null
        ? 1 - cdf(b)
        : GRID.reduce((sum, u, i) => sum + prev[i]! * STEP * (1 - cdf((b * Math.sqrt(t) - u) / Math.sqrt(dt))), 0);
    const b = target <= 0 ? Number.POSITIVE_INFINITY : solve(crossing, target);
    bounds.push(b);
    if (k === looks) break;
    const limit = b * Math.sqrt(t);
    const sd = Math.sqrt(dt);
    density = new Float64Array(GRID.length);
    for (let j = 0; j < GRID.length; j++) {
      const s = GRID[j]!;
      if (s >= limit) continue;
      if (prev === null) density[j] = pdf(s / Math.sqrt(t)) / Math.sqrt(t);
      else {
        let sum = 0;
        for (let i = 0; i < GRID.length; i++) sum += prev[i]! * pdf((s - GRID[i]!) / sd);
        density[j] = (sum * STEP) / sd;
      }
    }
  }
  return bounds;
}

/** The b ≥ 0 with crossing(b) = target (crossing falls as b rises). */
function solve(crossing: (b: number) => number, target: number): number {
  let lo = 0;
  let hi = 12;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (crossing(mid) > target) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** The two-sided confidence level whose lower bound above 0 is the one-sided test at boundary z. */
export function confidenceAt(z: number): number {
  return 1 - 2 * (1 - cdf(z));
}
