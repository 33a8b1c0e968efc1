import type { SuiteLevels } from '../tasks/curriculum.js';
import { suiteLevelOf } from '../tasks/suites/define.js';
import { fixed } from '../util/fixed.js';
import { compareMetric, type MetricName, type Pair } from './compare.js';
import type { GateCheck } from './gates.js';
import type { BootstrapOptions, Interval } from './stats.js';

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
      };
    });
}

/** The paired comparisons on each suite's levels below its current one. */
export function lowerLevels(pairs: readonly Pair[], levels: SuiteLevels, boot: BootstrapOptions): LevelComparison[] {
  return levelComparisons(pairs, boot).filter((r) => levels[r.suite] !== undefined && r.level < levels[r.suite]!);
}

/**
 * The curriculum's no-forgetting gate: a candidate fails when, on any level below a suite's current one, its
 * paired-bootstrap CI on the metric lies wholly below 0 (as max_category_regression with category_significance),
 * so a candidate that learned the new level by unlearning an old one is not deployed.
 */
export function forgettingGate(levels: readonly LevelComparison[], metric: MetricName): GateCheck {
  const m: GatedMetric = metric === 'success' ? 'success' : 'reward';
  const rows = levels
    .map((r) => ({ ...r, d: r.diff[m] }))
    .filter((r) => r.d !== null && !Number.isNaN(r.d.mean))
    .sort((a, b) => a.d!.mean - b.d!.mean);
  const failing = rows.filter((r) => r.d!.high < 0);
  const worst = failing[0] ?? rows[0];
  const describe = (r: (typeof rows)[number]) =>
    `${r.suite}@${r.level} ${fixed(r.d!.mean, 4)} [${fixed(r.d!.low, 4)}, ${fixed(r.d!.high, 4)}] over ${r.pairs} pair(s)`;
  const rule = `no level below a suite's current one loses ${m} with its CI wholly below 0`;
  return {
    gate: 'no_forgetting',
    passed: failing.length === 0,
    value: worst?.d?.mean ?? null,
    threshold: 0,
    detail: !worst
      ? "no level below a suite's current one in the evaluation (every suite at its first level)"
      : failing.length
        ? `${rule}: the candidate forgot ${failing.map(describe).join('; ')}`
        : `${rule}: worst ${describe(worst)}`,
  };
}
