import { GateError } from '../errors.js';
import type { DatasetStats } from './stats.js';

/** train.gates: what a dataset must have before any training runs on it. */
export interface GateThresholds {
  min_examples: number;
  /** Share of clean examples: rows whose every source (rollout, agent) had no invalid_action or drop. */
  min_clean_share: number;
  /** Distinct task categories among the rows (tasks without one count as "uncategorized"). */
  min_categories: number;
}

export type GateStats = Pick<DatasetStats, 'rows' | 'clean_rows' | 'categories'> & { algo?: string };

export interface GateCheck {
  gate: keyof GateThresholds;
  actual: number;
  required: number;
  passed: boolean;
  /** e.g. "12 examples (need ≥ 8)". */
  detail: string;
}

export interface GateResult {
  passed: boolean;
  checks: GateCheck[];
  /** One line naming every failed gate with its counts ("" when all pass). */
  message: string;
}

export function checkGates(stats: GateStats, gates: GateThresholds): GateResult {
  const share = stats.rows ? stats.clean_rows / stats.rows : 0;
  const categories = Object.keys(stats.categories)
    .filter((c) => (stats.categories[c] ?? 0) > 0)
    .sort();
  const pct = (x: number) => `${(Math.floor(x * 1000) / 10).toFixed(1)}%`;
  const checks: GateCheck[] = [
    check(
      'min_examples',
      stats.rows,
      gates.min_examples,
      `${stats.rows} example${stats.rows === 1 ? '' : 's'} (need ≥ ${gates.min_examples})`,
    ),
    check(
      'min_clean_share',
      share,
      gates.min_clean_share,
      `clean share ${pct(share)}: ${stats.clean_rows} of ${stats.rows} examples clean (need ≥ ${pct(gates.min_clean_share)})`,
    ),
    check(
      'min_categories',
      categories.length,
      gates.min_categories,
      `${categories.length} task categor${categories.length === 1 ? 'y' : 'ies'}${categories.length ? ` (${categories.join(', ')})` : ''} (need ≥ ${gates.min_categories})`,
    ),
  ];
  const failed = checks.filter((c) => !c.passed);
  const what = stats.algo ? `${stats.algo} dataset` : 'dataset';
  return {
    passed: !failed.length,
    checks,
    message: failed.length
      ? `${what} failed ${failed.length} quality gate${failed.length === 1 ? '' : 's'}: ${failed.map((c) => c.detail).join('; ')}`
      : '',
  };
}

/** checkGates, throwing a GateError (exit 1) with the counts when a gate fails. */
export function assertGates(stats: GateStats, gates: GateThresholds): GateResult {
  const result = checkGates(stats, gates);
  if (!result.passed) {
    throw new GateError(
      result.message,
      'collect more rollouts (`massgen-rl collect`), or relax train.gates (min_examples, min_clean_share, min_categories)',
    );
  }
  return result;
}

function check(gate: keyof GateThresholds, actual: number, required: number, detail: string): GateCheck {
  return { gate, actual, required, passed: actual >= required, detail };
}
