import { UserError } from '../errors.js';
import type { MetricName } from '../evaluation/compare.js';
import type { AuditRecord, LevelChange, Store, SuiteCurriculum } from '../store/index.js';
import { cycleHistory, type CycleHistoryRow } from './cycle-history.js';
import { cycleProfiles, type CycleProfile } from './cycle-profiles.js';
import { rewardCycles, shortTime, type CycleSeries } from './cycles.js';
import { promptHistory, type PromptChange } from './prompt-history.js';
import { overall, readEvaluation, type StoredEvaluation } from './summary.js';

export interface ReportOptions {
  /** The evaluation the report is about (default: the newest one with results). */
  evalRunId?: string;
  /** The primary metric when no evaluation says which (eval.metric). */
  metric: MetricName;
  title: string;
  now?: number;
  /** tasks.curriculum on: each suite's level and production's success at it (the config decides the levels). */
  curriculum?: SuiteCurriculum[] | null;
  /** The families whose verdicts the headroom mix counts (config verifyingFamilies; default exact and numeric). */
  verifying?: readonly string[];
}

/** Baseline and candidate of one category (or all of them) on the primary metric; whiskers from the paired interval. */
export interface CategoryBar {
  category: string;
  pairs: number;
  baseline: number | null;
  candidate: number | null;
  /** The candidate's mean as the baseline's plus the interval of the paired difference. */
  low: number | null;
  high: number | null;
}

/** What one evaluation cost per task × seed, on each side. */
export interface CostPoint {
  evalRunId: string;
  label: string;
  tokens: { baseline: number | null; candidate: number | null };
  wallS: { baseline: number | null; candidate: number | null };
}

export interface TrainingSeries {
  runId: string;
  algo: string;
  status: string;
  startedAt: number;
  steps: { step: number; loss: number | null; reward: number | null }[];
}

export interface HistoryRow extends Omit<AuditRecord, 'detail'> {
  beforeVersion: number | null;
  afterVersion: number | null;
}

export interface ReportData {
  title: string;
  generatedAt: number;
  metric: MetricName;
  production: { id: string; version: number } | null;
  selected: (StoredEvaluation & { categories: CategoryBar[] }) | null;
  /** Every evaluation with results, oldest first. */
  evaluations: StoredEvaluation[];
  cycles: CycleSeries;
  /** The last loop cycles, oldest first: each suite's success at its level, the outcome and the headroom mix. */
  cycleHistory: CycleHistoryRow[];
  /** The newest loop cycles' per-stage profiles, newest first. */
  profiles: CycleProfile[];
  cost: CostPoint[];
  training: TrainingSeries[];
  /** Changes of production and canary, newest first. */
  history: HistoryRow[];
  /** Prompt versions deployed, with their diff against their parent, newest first. */
  prompts: PromptChange[];
  /** tasks.curriculum on: each suite's level, and the level changes, newest first; null when it is off. */
  curriculum: { suites: SuiteCurriculum[]; changes: LevelChange[] } | null;
}

const MAX_POINTS = 1000;
const TRAINING_RUNS = 8;
const HISTORY_CYCLES = 30;

/** Everything the report shows, read from the store (nothing is written). */
export function gatherReport(store: Store, opts: ReportOptions): ReportData {
  const evaluations = store.evaluations
    .runs({ limit: 500 })
    .flatMap((r) => readEvaluation(r) ?? [])
    .reverse();
  const chosen = selectEvaluation(store, evaluations, opts.evalRunId);
  const metric = chosen?.summary.metric ?? opts.metric;
  const version = setVersions(store);
  const pointer = store.sets.pointer('production');
  return {
    title: opts.title,
    generatedAt: opts.now ?? Date.now(),
    metric,
    production: pointer ? { id: pointer.setId, version: version(pointer.setId) ?? 0 } : null,
    selected: chosen ? { ...chosen, categories: categoryBars(chosen, metric) } : null,
    evaluations,
    cycles: rewardCycles(store, evaluations, metric),
    cycleHistory: cycleHistory(store, HISTORY_CYCLES, opts.verifying),
    profiles: cycleProfiles(store),
    cost: evaluations
      .map((e) => {
        const [tokens, wall] = [overall(e.summary, 'tokens'), overall(e.summary, 'wall_ms')];
        const s = (ms: number | null | undefined) => (typeof ms === 'number' ? ms / 1000 : null);
        return {
          evalRunId: e.id,
          label: `eval ${shortTime(e.startedAt)}`,
          tokens: { baseline: tokens?.baseline ?? null, candidate: tokens?.candidate ?? null },
          wallS: { baseline: s(wall?.baseline), candidate: s(wall?.candidate) },
        };
      })
      .filter((c) => c.tokens.baseline !== null || c.tokens.candidate !== null),
    training: trainingSeries(store),
    history: store.audit.list({ limit: 200 }).map(({ detail: _detail, ...a }) => ({
      ...a,
      beforeVersion: a.beforeSet ? version(a.beforeSet) : null,
      afterVersion: a.afterSet ? version(a.afterSet) : null,
    })),
    prompts: promptHistory(store),
    curriculum: opts.curriculum ? { suites: opts.curriculum, changes: store.curriculum.history(200) } : null,
  };
}

function selectEvaluation(
  store: Store,
  evaluations: readonly StoredEvaluation[],
  id: string | undefined,
): StoredEvaluation | null {
  if (id === undefined) return evaluations.at(-1) ?? null;
  const run = store.evaluations.run(id);
  if (!run) {
    const recent = store.evaluations.runs({ limit: 5 }).map((r) => r.id);
    throw new UserError(
      `--eval ${id}: no such evaluation`,
      recent.length ? `recent evaluations: ${recent.join(', ')}` : 'no evaluation has run yet (`massgen-rl eval`)',
    );
  }
  const e = readEvaluation(run);
  if (!e)
    throw new UserError(
      `--eval ${id}: the evaluation has no results to report (status ${run.status}${run.error ? `: ${run.error}` : ''})`,
    );
  return e;
}

function categoryBars(e: StoredEvaluation, metric: MetricName): CategoryBar[] {
  const all = { category: 'all categories', pairs: e.summary.comparison.pairs, metrics: e.summary.comparison.overall };
  return [all, ...e.summary.comparison.categories].flatMap((c) => {
    const m = c.metrics.find((x) => x.metric === metric);
    if (!m || (m.baseline === null && m.candidate === null)) return [];
    const base = m.baseline;
    return [
      {
        category: c.category,
        pairs: c.pairs,
        baseline: base,
        candidate: m.candidate,
        low: base !== null && m.diff ? base + m.diff.low : null,
        high: base !== null && m.diff ? base + m.diff.high : null,
      },
    ];
  });
}

function trainingSeries(store: Store): TrainingSeries[] {
  const value = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? x : null);
  return store.trainingRuns
    .latest(TRAINING_RUNS)
    .reverse()
    .flatMap((run) => {
      const rows = store.trainingMetrics.list(run.id);
      const every = Math.ceil(rows.length / MAX_POINTS);
      const steps = rows
        .filter((_, i) => i % every === 0 || i === rows.length - 1)
        .map((r) => ({ step: r.step, loss: value(r.metrics.loss), reward: value(r.metrics.reward) }))
        .filter((s) => s.loss !== null || s.reward !== null);
      const algo = typeof run.detail.algo === 'string' ? run.detail.algo : '?';
      return steps.length ? [{ runId: run.id, algo, status: run.status, startedAt: run.startedAt, steps }] : [];
    });
}

function setVersions(store: Store): (id: string) => number | null {
  const cache = new Map<string, number | null>();
  return (id) => {
    if (!cache.has(id)) cache.set(id, store.sets.get(id)?.version ?? null);
    return cache.get(id)!;
  };
}
