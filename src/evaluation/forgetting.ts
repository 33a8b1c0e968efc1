import type { SuiteLevels } from '../tasks/curriculum.js';
import { suiteLevelOf } from '../tasks/suites/define.js';
import { compareMetric, type MetricName, type Pair } from './compare.js';
import type { GateCheck } from './gates.js';
import { describeGroup, groupRegressions, type RegressionRule } from './group-regressions.js';
import type { BootstrapOptions, Interval, PairedCounts } from './stats.js';

const GATED = ['reward', 'success'] as const;
type GatedMetric = (typeof GATED)[number];

/** The paired comparison on one built-in suite's level, on each metric a gate may use. */
export interface LevelComparison {
  suite: string;
  level: number;
  pairs: number;
  /** Each side's mean (success: the share solved). */
  baseline: Record<GatedMetric, number | null>;
  candidate: Record<GatedMetric, number | null>;
  diff: Record<GatedMetric, Interval | null>;
  /** Wins and losses per metric; absent in evaluations stored before they were counted. */
  counts?: Record<GatedMetric, PairedCounts>;
}

/** The paired comparison on each built-in suite's level among the pairs (task files have none), by suite and level. */
export function levelComparisons(pairs: readonly Pair[], boot: BootstrapOptions): LevelComparison[] {
  const groups = new Map<string, { suite: string; level: number; pairs: Pair[] }>();
  for (const p of pairs) {
    const where = suiteLevelOf(p.taskId);
    if (!where) continue;
    const key = `${where.suite}@${where.level}`;
    const g = groups.get(key) ?? { ...where, pairs: [] };
    g.pairs.push(p);
    groups.set(key, g);
  }
  return [...groups.values()]
    .sort((a, b) => a.suite.localeCompare(b.suite) || a.level - b.level)
    .map((g) => {
      const m = GATED.map((name) => [name, compareMetric(g.pairs, name, boot)] as const);
      const per = <T>(pick: (c: (typeof m)[number][1]) => T) =>
        Object.fromEntries(m.map(([name, c]) => [name, pick(c)])) as Record<GatedMetric, T>;
      return {
        suite: g.suite,
        level: g.level,
        pairs: g.pairs.length,
        baseline: per((c) => c.baseline),
        candidate: per((c) => c.candidate),
        diff: per((c) => c.diff),
        counts: per((c) => c.counts),
      };
    });
}

/** The paired comparisons on each suite's levels below its current one. */
export function lowerLevels(pairs: readonly Pair[], levels: SuiteLevels, boot: BootstrapOptions): LevelComparison[] {
  return levelComparisons(pairs, boot).filter((r) => levels[r.suite] !== undefined && r.level < levels[r.suite]!);
}

/**
 * The curriculum's no-forgetting gate: a candidate fails when, on a level below a suite's current one, it loses
 * significantly (the deploy gates' exact test, Holm-corrected over the levels tested, with no tolerance), so a
 * candidate that learned the new level by unlearning an old one is not deployed.
 */
export function forgettingGate(
  levels: readonly LevelComparison[],
  metric: MetricName,
  rule: RegressionRule,
): GateCheck {
  const m: GatedMetric = metric === 'success' ? 'success' : 'reward';
  const groups = levels.flatMap((r) => {
    const d = r.diff[m];
    return d ? [{ name: `${r.suite}@${r.level}`, pairs: r.pairs, diff: d, counts: r.counts?.[m] }] : [];
  });
  const v = groupRegressions(groups, { ...rule, tolerance: 0, significance: true }, 'lower level');
  const worst = v.failing[0] ?? v.rows[0];
  return {
    gate: 'no_forgetting',
    passed: v.failing.length === 0,
    value: worst?.diff.mean ?? null,
    threshold: 0,
    detail: !worst
      ? "no level below a suite's current one in the evaluation (every suite at its first level)"
      : v.failing.length
        ? `${v.rule} (${m}): the candidate forgot ${v.failing.map(describeGroup).join('; ')}`
        : `${v.rule} (${m}): worst ${describeGroup(worst)}`,
  };
}
