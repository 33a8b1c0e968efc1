import { mean } from 'simple-statistics';
import type { EvalResult } from '../store/index.js';
import {
  exactBinomialTwoSided,
  pairedBootstrap,
  winTieLoss,
  type BootstrapOptions,
  type Interval,
  type PairedCounts,
} from './stats.js';

/** `checked`: rewards.references off, the final answer against the withheld reference (the held-out check). */
export const METRICS = ['reward', 'success', 'consensus', 'rounds', 'tokens', 'wall_ms', 'checked'] as const;
export type MetricName = (typeof METRICS)[number];

const LOWER_IS_BETTER = new Set<MetricName>(['rounds', 'tokens', 'wall_ms']);
const BINARY = new Set<MetricName>(['success', 'consensus', 'checked']);

/** One task and seed, measured for both sets. */
export interface Pair {
  taskId: string;
  category: string;
  seed: number;
  baseline: EvalResult;
  candidate: EvalResult;
}

export interface MetricComparison {
  metric: MetricName;
  /** Pairs with a value on both sides. */
  n: number;
  baseline: number | null;
  candidate: number | null;
  /** Candidate − baseline, with its paired-bootstrap interval. */
  diff: Interval | null;
  /** Pairs where the candidate did better, the same, worse (lower is better for rounds, tokens, wall time). */
  counts: PairedCounts;
  /** Two-sided exact test: McNemar on discordant pairs for binary metrics, the sign test otherwise. */
  test: 'mcnemar' | 'sign';
  pValue: number;
}

export interface Comparison {
  pairs: number;
  overall: MetricComparison[];
  categories: { category: string; pairs: number; metrics: MetricComparison[] }[];
}

export function valueOf(r: EvalResult, metric: MetricName): number | null {
  switch (metric) {
    case 'reward':
      return r.reward;
    case 'success':
      return r.success;
    case 'consensus':
      return r.consensus ? 1 : 0;
    case 'rounds':
      return r.rounds;
    case 'tokens':
      return r.tokens;
    case 'wall_ms':
      return r.wallMs;
    case 'checked':
      return r.checked ?? null;
  }
}

export function compareMetric(pairs: readonly Pair[], metric: MetricName, boot: BootstrapOptions): MetricComparison {
  const both = pairs.flatMap((p) => {
    const b = valueOf(p.baseline, metric);
    const c = valueOf(p.candidate, metric);
    return b === null || c === null ? [] : [{ b, c }];
  });
  const diffs = both.map(({ b, c }) => c - b);
  const better = LOWER_IS_BETTER.has(metric) ? diffs.map((d) => -d) : diffs;
  const counts = winTieLoss(better);
  return {
    metric,
    n: both.length,
    baseline: both.length ? mean(both.map((x) => x.b)) : null,
    candidate: both.length ? mean(both.map((x) => x.c)) : null,
    diff: both.length ? pairedBootstrap(diffs, boot) : null,
    counts,
    test: BINARY.has(metric) ? 'mcnemar' : 'sign',
    // Discordant pairs of a binary metric are exactly its wins and losses, so both tests are one binomial test.
    pValue: exactBinomialTwoSided(counts.wins, counts.wins + counts.losses),
  };
}

/** Every metric over all pairs (`checked` only where an evaluation has it), and reward and success per task category. */
export function compare(pairs: readonly Pair[], boot: BootstrapOptions): Comparison {
  const byCategory = new Map<string, Pair[]>();
  for (const p of pairs) byCategory.set(p.category, [...(byCategory.get(p.category) ?? []), p]);
  return {
    pairs: pairs.length,
    overall: METRICS.map((m) => compareMetric(pairs, m, boot)).filter((m) => m.metric !== 'checked' || m.n > 0),
    categories: [...byCategory.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([category, ps]) => ({
        category,
        pairs: ps.length,
        metrics: (['reward', 'success'] as const).map((m) => compareMetric(ps, m, boot)),
      })),
  };
}

/** The metric eval.metric names. */
export function primaryMetric(metric: 'mean_reward' | 'success_rate'): MetricName {
  return metric === 'success_rate' ? 'success' : 'reward';
}
