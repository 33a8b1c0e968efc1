import type { MetricName } from '../evaluation/compare.js';
import type { RunRecord, Store } from '../store/index.js';
import { overall, readEvaluation, type StoredEvaluation } from './summary.js';

/** One point of the reward chart: a loop cycle, or (without loop cycles) one evaluation or collect run. */
export interface CyclePoint {
  label: string;
  at: number;
  kind: 'loop' | 'eval' | 'collect';
  /** Mean reward of the collect that served production. */
  collect: number | null;
  /** Baseline (production) and candidate means of the primary metric in the evaluation. */
  baseline: number | null;
  candidate: number | null;
  evalRunId: string | null;
  /** What came of it: deployed, not promoted, gates failed, a failed stage. */
  note: string | null;
}

export interface CycleSeries {
  source: 'loop' | 'runs';
  points: CyclePoint[];
}

type Obj = Record<string, unknown>;
const obj = (x: unknown): Obj => (x !== null && typeof x === 'object' && !Array.isArray(x) ? (x as Obj) : {});
const str = (x: unknown) => (typeof x === 'string' && x ? x : null);
const fin = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? x : null);

/** Loop cycles in time order; without any, evaluations and collect runs in time order. */
export function rewardCycles(store: Store, evaluations: readonly StoredEvaluation[], metric: MetricName): CycleSeries {
  const byId = new Map(evaluations.map((e) => [e.id, e]));
  const evaluation = (id: string | null) => {
    if (!id) return undefined;
    if (!byId.has(id)) {
      const run = store.evaluations.run(id);
      const e = run && readEvaluation(run);
      if (e) byId.set(id, e);
    }
    return byId.get(id);
  };
  const loops = store.loopRuns
    .latest(1000)
    .reverse()
    .flatMap((run) => loopPoints(store, run, metric, evaluation));
  const points = loops.filter((p) => p.collect !== null || p.baseline !== null || p.candidate !== null);
  if (points.length) return { source: 'loop', points };
  return { source: 'runs', points: runPoints(store, evaluations, metric) };
}

// The loop writes its state as it goes; a cycle that stopped part way has only some stages.
function loopPoints(
  store: Store,
  run: RunRecord,
  metric: MetricName,
  evaluation: (id: string | null) => StoredEvaluation | undefined,
): CyclePoint[] {
  const states = Array.isArray(run.detail.cycles) ? (run.detail.cycles as unknown[]).map(obj) : [run.detail];
  return states.map((state, i) => {
    const stages = obj(state.stages);
    const [collect, ev, deploy] = [obj(stages.collect), obj(stages.eval), obj(stages.deploy)];
    const collectRun = str(collect.run_id);
    const collectReward =
      fin(collect.mean_reward) ?? (collectRun ? fin(store.collectRuns.get(collectRun)?.result?.meanReward) : null);
    const evalRunId = str(ev.eval_run_id);
    const e = evaluation(evalRunId);
    const m = e && overall(e.summary, metric);
    const failed = Object.entries(stages).find(([, s]) => obj(s).status === 'failed')?.[0];
    const note =
      str(deploy.action)
      ?? (failed
        ? `${failed} failed`
        : ev.passed === false
          ? 'gates failed'
          : run.status === 'failed'
            ? 'failed'
            : null);
    const cycle = fin(state.cycle) ?? i + 1;
    return {
      label: `cycle ${cycle}`,
      at: run.startedAt,
      kind: 'loop' as const,
      collect: collectReward,
      baseline: m?.baseline ?? null,
      candidate: m?.candidate ?? null,
      evalRunId,
      note,
    };
  });
}

function runPoints(store: Store, evaluations: readonly StoredEvaluation[], metric: MetricName): CyclePoint[] {
  const evals = evaluations.map((e): CyclePoint => {
    const m = overall(e.summary, metric);
    return {
      label: `eval ${shortTime(e.startedAt)}`,
      at: e.startedAt,
      kind: 'eval',
      collect: null,
      baseline: m?.baseline ?? null,
      candidate: m?.candidate ?? null,
      evalRunId: e.id,
      note: e.summary.passed === null ? e.status : e.summary.passed ? 'gates passed' : 'gates failed',
    };
  });
  const collects = store.collectRuns.latest(1000).flatMap((r): CyclePoint[] => {
    const reward = fin(r.result?.meanReward);
    return reward === null
      ? []
      : [
          {
            label: `collect ${shortTime(r.startedAt)}`,
            at: r.startedAt,
            kind: 'collect',
            collect: reward,
            baseline: null,
            candidate: null,
            evalRunId: null,
            note: r.id,
          },
        ];
  });
  return [...evals, ...collects]
    .filter((p) => p.collect !== null || p.baseline !== null || p.candidate !== null)
    .sort((a, b) => a.at - b.at);
}

/** `MM-DD HH:MM` in UTC: short enough for an axis label, the same wherever the report is built. */
export function shortTime(ms: number): string {
  return new Date(ms).toISOString().slice(5, 16).replace('T', ' ');
}
