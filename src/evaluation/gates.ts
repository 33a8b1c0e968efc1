import type { RLConfig } from '../config/schema.js';
import { fixed } from '../util/fixed.js';
import type { Comparison, MetricComparison, MetricName } from './compare.js';
import { describeGroup, groupRegressions, type RegressionRule } from './group-regressions.js';
import { exactBinomialUpper, type Interval } from './stats.js';

export interface GateCheck {
  gate: string;
  passed: boolean;
  /** The measured value and the threshold it is held against. */
  value: number | null;
  threshold: number | null;
  detail: string;
}

type Gates = RLConfig['deploy']['gates'];

/** eval.sequential with more than one look: which look this is, and the primary metric's interval at its level. */
export interface GateLook {
  look: number;
  looks: number;
  spending: string;
  diff: Interval | null;
}

const fmt = (x: number | null | undefined, digits = 4) => fixed(x, digits);

/** The deploy gates of config, held against an evaluation's comparison on its primary metric. */
export function checkGates(cmp: Comparison, metric: MetricName, gates: Gates, look?: GateLook): GateCheck[] {
  const primary = cmp.overall.find((m) => m.metric === metric)!;
  const checks: GateCheck[] = [];
  const d = primary.diff;
  const ci = look ? look.diff : d;
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
      passed: ci !== null && ci.low > 0,
      value: ci?.low ?? null,
      threshold: 0,
      detail:
        (look ? `look ${look.look} of ${look.looks} (${look.spending.replace('_', '–')} spending): ` : '')
        + `${+((ci?.level ?? 0.95) * 100).toFixed(2)} % CI of the difference [${fmt(ci?.low)}, ${fmt(ci?.high)}] lies above 0`,
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
  const checked = cmp.overall.find((m) => m.metric === 'checked');
  if (checked) checks.push(referenceGate(checked, gates.reference_alpha));
  return checks;
}

/**
 * rewards.references off: a team that learns from its own majority can grow confidently wrong, which the agreement
 * it is scored by cannot see. Where the evaluation's tasks have references, the candidate must not be worse on them
 * (one-sided exact McNemar on the pairs one side got right and the other wrong).
 */
function referenceGate(m: MetricComparison, alpha: number): GateCheck {
  const { wins, losses } = m.counts;
  const p = exactBinomialUpper(losses, wins + losses);
  return {
    gate: 'reference_check',
    passed: p >= alpha,
    value: m.diff?.mean ?? null,
    threshold: alpha,
    detail:
      `on ${m.n} pair(s) with a withheld reference: ${fmt(m.baseline, 3)} → ${fmt(m.candidate, 3)} right, `
      + `${wins} won, ${losses} lost; one-sided exact p = ${fmt(p, 3)} ≥ ${alpha}`,
  };
}

/** A category fails when it loses more than the tolerance and, with category_significance, its exact test finds the
 * loss after the correction for the categories tested together (group-regressions.ts). */
function categoryGate(cmp: Comparison, metric: MetricName, gates: Gates): GateCheck {
  const groups = cmp.categories.flatMap((c) => {
    const m = c.metrics.find((x) => x.metric === metric);
    return m?.diff ? [{ name: c.category, pairs: c.pairs, diff: m.diff, counts: m.counts }] : [];
  });
  const v = groupRegressions(groups, categoryRule(gates), 'category');
  const worst = v.failing[0] ?? v.rows[0];
  return {
    gate: 'max_category_regression',
    passed: v.failing.length === 0,
    value: worst?.diff.mean ?? null,
    threshold: -gates.max_category_regression,
    detail: !worst
      ? 'no category to compare'
      : v.failing.length
        ? `${v.rule}: ${v.failing.map(describeGroup).join('; ')}`
        : `${v.rule}: worst category ${describeGroup(worst)}`,
  };
}

/** The deploy gates' rule for groups of pairs (categories, and the curriculum's levels). */
export function categoryRule(gates: Gates): RegressionRule {
  return {
    tolerance: gates.max_category_regression,
    significance: gates.category_significance,
    minPairs: gates.category_min_pairs,
    alpha: gates.category_alpha,
  };
}

export function gatesPass(checks: readonly GateCheck[]): boolean {
  return checks.every((c) => c.passed);
}
