import { mean, permutationTest, quantileSorted } from 'simple-statistics';
import { Rng } from '../tasks/prng.js';
import type { BootstrapOptions, Interval } from './stats.js';

export interface UnpairedComparison {
  /** Rewards of each group, in order. */
  n: { before: number; after: number };
  before: number | null;
  after: number | null;
  /** after − before, with a bootstrap interval (each group resampled on its own). */
  diff: Interval | null;
  /** One-sided permutation test that `after` is lower than `before` (seeded). */
  pLower: number | null;
}

/** Two independent groups of rollout rewards (production before and after a deploy; canary and production). */
export function compareGroups(
  before: readonly number[],
  after: readonly number[],
  boot: BootstrapOptions,
): UnpairedComparison {
  const out: UnpairedComparison = {
    n: { before: before.length, after: after.length },
    before: null,
    after: null,
    diff: null,
    pLower: null,
  };
  if (!before.length || !after.length) return out;
  out.before = mean([...before]);
  out.after = mean([...after]);
  const rng = new Rng(boot.seed);
  const draw = (xs: readonly number[]) => {
    let s = 0;
    for (let i = 0; i < xs.length; i++) s += xs[Math.floor(rng.next() * xs.length)]!;
    return s / xs.length;
  };
  const diffs = Array.from({ length: boot.resamples }, () => draw(after) - draw(before)).sort((a, b) => a - b);
  const tail = (1 - boot.confidence) / 2;
  out.diff = {
    mean: out.after - out.before,
    low: quantileSorted(diffs, tail),
    high: quantileSorted(diffs, 1 - tail),
    level: boot.confidence,
    resamples: boot.resamples,
  };
  // H1: after < before, i.e. after − before is lower than chance allows.
  out.pLower = permutationTest([...after], [...before], 'less', boot.resamples, () => rng.next());
  return out;
}
