import type { RLConfig } from '../config/schema.js';
import { fixed } from '../util/fixed.js';
import type { Comparison, MetricName } from './compare.js';
import type { Interval } from './stats.js';

export interface GateCheck {
  gate: string;
  passed: boolean;
  /** The measured value and the threshold it is held against. */
  value: number | null;
  threshold: number | null;
  detail: string;
}

type Gates = RLConfig['deploy']['gates'];

const fmt = (x: number | null | undefined, digits = 4) => fixed(x, digits);

/** The deploy gates of config, held against an evaluation's comparison on its primary metric. */
export function checkGates(cmp: Comparison, metric: MetricName, gates: Gates): GateCheck[] {
  const primary = cmp.overall.find((m) => m.metric === metric)!;
  const checks: GateCheck[] = [];
  const d = primary.diff;
  checks.push({
    gate: 'min_pairs',
    passed: primary.n >= gates.min_pairs && primary.n > 0,
    value: primary.n,
    threshold: gates.min_pairs,
    detail: `${primary.n} task×seed pair(s) with a ${metric} value on both sides; need ${gates.min_pairs} (eval.n × eval.seeds)`,
  });
  checks.push({
    gate: 'min_improvement',
    passed: d !== null && d.mean >= gates.min_improvement,
    value: d?.mean ?? null,
    threshold: gates.min_improvement,
    detail: `mean ${metric} difference ${fmt(d?.mean)} (baseline ${fmt(primary.baseline)}, candidate ${fmt(primary.candidate)}) ≥ ${gates.min_improvement}`,
  });
  if (gates.ci_lower_above_zero) {
    checks.push({
      gate: 'ci_lower_above_zero',
      passed: d !== null && d.low > 0,
      value: d?.low ?? null,
      threshold: 0,
      detail: `${Math.round((d?.level ?? 0.95) * 100)} % CI of the difference [${fmt(d?.low)}, ${fmt(d?.high)}] lies above 0`,
    });
  }
  checks.push(categoryGate(cmp, metric, gates));
  if (gates.max_cost_increase !== null) {
    const tokens = cmp.overall.find((m) => m.metric === 'tokens')!;
    const ratio = tokens.baseline && tokens.candidate !== null ? tokens.candidate / tokens.baseline - 1 : null;
    checks.push({
      gate: 'max_cost_increase',
      passed: ratio === null || ratio <= gates.max_cost_increase,
      value: ratio,
      threshold: gates.max_cost_increase,
      detail: `tokens per task ${fmt(tokens.baseline, 0)} → ${fmt(tokens.candidate, 0)} (${ratio === null ? '—' : `${ratio >= 0 ? '+' : ''}${(ratio * 100).toFixed(1)} %`}) ≤ +${(gates.max_cost_increase * 100).toFixed(0)} %`,
    });
  }
  return checks;
}

/** A category fails when it loses more than the tolerance; with category_significance, only when its paired-bootstrap
 * interval also lies wholly below 0, so that one task of a three-task category flipping does not block a deploy. */
function categoryGate(cmp: Comparison, metric: MetricName, gates: Gates): GateCheck {
  const tol = gates.max_category_regression;
  const rows = cmp.categories
    .map((c) => ({ category: c.category, pairs: c.pairs, diff: c.metrics.find((m) => m.metric === metric)?.diff }))
    .filter((c): c is { category: string; pairs: number; diff: Interval } => !!c.diff && !Number.isNaN(c.diff.mean))
    .sort((a, b) => a.diff.mean - b.diff.mean);
  const failing = rows.filter((c) => c.diff.mean < -tol && (!gates.category_significance || c.diff.high < 0));
  const worst = failing[0] ?? rows[0];
  const rule = gates.category_significance
    ? `no category loses more than ${tol} with its CI wholly below 0`
    : `no category loses more than ${tol}`;
  const describe = (c: (typeof rows)[number]) =>
    `${c.category} ${fmt(c.diff.mean)} [${fmt(c.diff.low)}, ${fmt(c.diff.high)}] over ${c.pairs} pair(s)`;
  return {
    gate: 'max_category_regression',
    passed: failing.length === 0,
    value: worst?.diff.mean ?? null,
    threshold: -tol,
    detail: !worst
      ? 'no category to compare'
      : failing.length
        ? `${rule}: ${failing.map(describe).join('; ')}`
        : `${rule}: worst category ${describe(worst)}`,
  };
}

export function gatesPass(checks: readonly GateCheck[]): boolean {
  return checks.every((c) => c.passed);
}
