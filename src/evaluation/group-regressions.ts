import { fixed } from '../util/fixed.js';
import { exactBinomialUpper, holmAdjusted, type Interval, type PairedCounts } from './stats.js';

/** One group of pairs (a task category, a suite's level) on the gated metric. */
export interface Group {
  name: string;
  pairs: number;
  diff: Interval;
  /** Wins and losses of the candidate; absent in comparisons stored before they were counted. */
  counts?: PairedCounts;
}

export interface RegressionRule {
  /** A group may lose at most this much on the metric's mean. */
  tolerance: number;
  /** true: a loss beyond the tolerance refuses only when the exact test finds it, Holm-corrected across groups. */
  significance: boolean;
  /** Groups with fewer pairs are shown but cannot refuse (and do not widen the correction). */
  minPairs: number;
  /** Family-wise error rate over the groups tested. */
  alpha: number;
}

export interface GroupVerdict extends Group {
  tested: boolean;
  /** One-sided exact sign test (McNemar on a binary metric) that the candidate loses more pairs than it wins. */
  pValue: number | null;
  /** Holm-adjusted over the groups tested. */
  adjusted: number | null;
  failing: boolean;
}

export interface RegressionVerdicts {
  rows: GroupVerdict[];
  failing: GroupVerdict[];
  tested: number;
  rule: string;
}

/**
 * Which groups regress. A bootstrap interval on a handful of pairs is anti-conservative, and ~13 groups each tested
 * at 95 % refused an unchanged candidate in 36 % of A/A comparisons at the quickstart's size (bench/gates.mjs): so
 * each group is held to an exact one-sided sign test, only groups with enough pairs are tested, and the tests are
 * Holm-corrected together. Rows come worst first.
 */
export function groupRegressions(groups: readonly Group[], rule: RegressionRule, noun: string): RegressionVerdicts {
  const ok = groups.filter((g) => !Number.isNaN(g.diff.mean)).sort((a, b) => a.diff.mean - b.diff.mean);
  if (!rule.significance) {
    const rows = ok.map((g) => ({ ...g, tested: true, pValue: null, adjusted: null, failing: lost(g, rule) }));
    const failing = rows.filter((r) => r.failing);
    return { rows, failing, tested: rows.length, rule: `no ${noun} loses more than ${rule.tolerance}` };
  }
  const tested = ok.filter((g) => g.pairs >= rule.minPairs);
  // a comparison stored before wins and losses were counted: its interval decides, as it did then
  const pValues = tested.map((g) => (g.counts ? oneSided(g.counts) : g.diff.high < 0 ? 0 : 1));
  const adjusted = holmAdjusted(pValues);
  const at = new Map(tested.map((g, i) => [g, i]));
  const rows = ok.map((g): GroupVerdict => {
    const i = at.get(g);
    if (i === undefined) return { ...g, tested: false, pValue: null, adjusted: null, failing: false };
    const failing = lost(g, rule) && adjusted[i]! <= rule.alpha;
    return { ...g, tested: true, pValue: pValues[i]!, adjusted: adjusted[i]!, failing };
  });
  const small = ok.length - tested.length;
  const family =
    `${tested.length} of ${ok.length} ${noun}(s) tested`
    + (small ? ` (${small} under ${rule.minPairs} pairs cannot refuse)` : '')
    + `, one-sided exact sign test, Holm at α ${rule.alpha}`;
  return {
    rows,
    failing: rows.filter((r) => r.failing),
    tested: tested.length,
    rule: `no ${noun} loses more than ${rule.tolerance}, significantly: ${family}`,
  };
}

/** A group's numbers as the gate line shows them. */
export function describeGroup(g: GroupVerdict): string {
  const counts = g.counts ? `, ${g.counts.wins} won / ${g.counts.losses} lost` : '';
  const test = g.pValue === null ? '' : `, p ${fixed(g.pValue, 3)}, Holm ${fixed(g.adjusted, 3)}`;
  const untested = g.tested ? '' : ', too few pairs to test';
  const ci = `[${fixed(g.diff.low, 4)}, ${fixed(g.diff.high, 4)}]`;
  return `${g.name} ${fixed(g.diff.mean, 4)} ${ci} over ${g.pairs} pair(s)${counts}${test}${untested}`;
}

const lost = (g: Group, rule: RegressionRule) => g.diff.mean < -rule.tolerance;
const oneSided = (c: PairedCounts) => exactBinomialUpper(c.losses, c.wins + c.losses);
