import { z } from 'zod';
import { headroomMix, type HeadroomMix } from '../datasets/headroom.js';
import type { Store } from '../store/index.js';
import { readEvaluation, type StoredLevel } from './summary.js';

// The fields of a stored cycle (scheduler/stage-records.ts writes them) this view reads, read leniently: a cycle
// stored by another version shows what it can.
const text = z.string().optional().catch(undefined);
const stage = z.object({
  status: z.string().catch('unknown'),
  reason: text,
  action: text,
  eval_run_id: text,
  baseline_set: text,
  failed_gates: z.array(z.string()).optional().catch(undefined),
  gates: z
    .array(z.object({ gate: z.string(), passed: z.boolean() }))
    .optional()
    .catch(undefined),
});
const cycleState = z.object({
  cycle: z.number().catch(0),
  outcome: text,
  stages: z.record(z.string(), stage).catch({}),
});
type CycleView = z.infer<typeof cycleState>;

/** Success on one suite at its level in a cycle's evaluation: production going in, the candidate, and after. */
export interface SuiteSuccess {
  suite: string;
  level: number;
  pairs: number;
  production: number | null;
  candidate: number | null;
  /** Production once the cycle ended: the candidate's when it was promoted, else production's. */
  after: number | null;
}

/** One loop cycle as someone watching many nights reads it. */
export interface CycleHistoryRow {
  cycle: number;
  startedAt: number;
  status: string;
  /** promoted, forced, canary started, refused (with the gates), a skipped or failed stage, or running. */
  outcome: string;
  promoted: boolean;
  /** The gates that refused the candidate. */
  refusedBy: string[];
  evalRunId: string | null;
  /** The production set the cycle measured (its evaluation's baseline), and its version. */
  production: { id: string; version: number | null } | null;
  /** Each suite at its current level: the highest the evaluation measured (the curriculum's, when it is on). */
  suites: SuiteSuccess[];
  /** The production set's tasks by how often its answers were right: what the cycle had to learn from. */
  headroom: HeadroomMix | null;
}

/** The last `limit` loop cycles, oldest first (`verifying`: the families whose verdicts the headroom counts). */
export function cycleHistory(store: Store, limit = 10, verifying?: readonly string[]): CycleHistoryRow[] {
  const mixes = new Map<string, HeadroomMix>();
  const mixOf = (setId: string) => {
    if (!mixes.has(setId)) mixes.set(setId, headroomMix(store, setId, verifying));
    return mixes.get(setId)!;
  };
  return store.loopRuns
    .latest(limit)
    .reverse()
    .map((c) => {
      const state = cycleState.parse(c.detail);
      const { eval: ev, deploy } = state.stages;
      const run = ev?.eval_run_id ? store.evaluations.run(ev.eval_run_id) : undefined;
      const evaluation = run ? readEvaluation(run) : null;
      const promoted = deploy?.status === 'done' && (deploy.action === 'promoted' || deploy.action === 'forced');
      const productionId = evaluation?.baselineSet ?? ev?.baseline_set ?? null;
      const refusedBy = deploy?.gates?.filter((g) => !g.passed).map((g) => g.gate) ?? ev?.failed_gates ?? [];
      return {
        cycle: state.cycle,
        startedAt: c.startedAt,
        status: c.status,
        outcome: outcomeLine(state, c.status, refusedBy),
        promoted,
        refusedBy: deploy?.action === 'not promoted' ? refusedBy : [],
        evalRunId: ev?.eval_run_id ?? null,
        production: productionId ? { id: productionId, version: store.sets.get(productionId)?.version ?? null } : null,
        suites: evaluation
          ? suiteSuccess(evaluation.summary.levels, evaluation.summary.curriculum?.levels, promoted)
          : [],
        headroom: productionId ? mixOf(productionId) : null,
      };
    });
}

/** Each suite's row at its current level (the curriculum's, else the highest evaluated) on success. */
export function suiteSuccess(
  levels: readonly StoredLevel[],
  current: Record<string, number> | undefined,
  promoted: boolean,
): SuiteSuccess[] {
  const top = new Map<string, StoredLevel>();
  for (const l of levels) {
    const want = current?.[l.suite];
    const best = top.get(l.suite);
    if (want !== undefined ? l.level === want : !best || l.level > best.level) top.set(l.suite, l);
  }
  return [...top.values()]
    .sort((a, b) => a.suite.localeCompare(b.suite))
    .map((l) => ({
      suite: l.suite,
      level: l.level,
      pairs: l.pairs,
      production: l.baseline.success,
      candidate: l.candidate.success,
      after: promoted ? l.candidate.success : l.baseline.success,
    }));
}

function outcomeLine(state: CycleView, status: string, refusedBy: readonly string[]): string {
  const { deploy } = state.stages;
  if (deploy?.status === 'done' && deploy.action) {
    if (deploy.action !== 'not promoted') return deploy.action;
    return refusedBy.length ? `refused: ${refusedBy.join(', ')}` : 'not promoted';
  }
  const stages = Object.entries(state.stages);
  const failed = stages.find(([, s]) => s.status === 'failed')?.[0];
  if (failed) return `${failed} failed`;
  const skipped = stages.find(([, s]) => s.status === 'skipped');
  if (skipped) return `skipped at ${skipped[0]}${skipped[1].reason ? `: ${skipped[1].reason}` : ''}`;
  return status === 'running' ? 'running' : (state.outcome ?? status);
}

const pct = (x: number | null) => (x === null ? '—' : `${Math.round(x * 100)} %`);

/** A suite's cell: its level and production's success there, with the promoted candidate's after an arrow. */
export function suiteCell(s: SuiteSuccess | undefined, promoted: boolean): string {
  if (!s) return '—';
  return `L${s.level} ${pct(s.production)}${promoted ? ` → ${pct(s.candidate)}` : ''}`;
}

/** The headroom mix in one line: tasks never, sometimes and always answered right (compact: `n/s/a`). */
export function headroomLine(m: HeadroomMix | null, compact = false): string {
  if (!m || !m.tasks) return '—';
  if (compact) return `${m.never}/${m.sometimes}/${m.always}`;
  return `never ${m.never} · sometimes ${m.sometimes} · always ${m.always}`;
}

/** Every suite any of the cycles measured, in name order. */
export function historySuites(rows: readonly CycleHistoryRow[]): string[] {
  return [...new Set(rows.flatMap((r) => r.suites.map((s) => s.suite)))].sort();
}
