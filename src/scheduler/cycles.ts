import { LOOP_STEPS } from '../config/schema.js';
import type { RunRecord, Store } from '../store/index.js';
import { CYCLE_STATE, type CycleState, type Stage } from './stage-records.js';

export type {
  CycleState,
  Stage,
  StageBase,
  StageContext,
  StageRecord,
  StageRecords,
  StageResult,
} from './stage-records.js';

export interface OpenCycle {
  id: string;
  state: CycleState;
  resumed: boolean;
}

/**
 * The stages a cycle runs for loop.steps, in their fixed order. A list with collect but no review gets
 * review after collect: collect reviewed production itself before review was a stage, and configs
 * written then list no review.
 */
export function cycleSteps(steps: readonly Stage[]): { steps: Stage[]; impliedReview: boolean } {
  const impliedReview = steps.includes('collect') && !steps.includes('review');
  return { steps: LOOP_STEPS.filter((s) => steps.includes(s) || (impliedReview && s === 'review')), impliedReview };
}

/**
 * A stored cycle's state, checked once as it is read: undefined when the run holds none this version
 * can take up (an older layout, or a record that does not parse), so it is shown without stages and a
 * new cycle starts instead of resuming it.
 */
export function readCycle(detail: Record<string, unknown>): CycleState | undefined {
  const parsed = CYCLE_STATE.safeParse(detail);
  return parsed.success ? parsed.data : undefined;
}

/**
 * The cycle to run (the caller holds the cycle lock): the newest one, when it stopped before finishing
 * (its process died, it was interrupted, it ran out of time, or it lost the lock) with a stage left to
 * do; else a new one.
 */
export function openCycle(store: Store, stages: readonly Stage[]): OpenCycle {
  const last = store.loopRuns.latest(1)[0];
  const state = last && readCycle(last.detail);
  const finished = (s: Stage) => state?.stages[s]?.status === 'done' || state?.stages[s]?.status === 'skipped';
  if (last && state && last.status !== 'completed' && stages.some((s) => !finished(s))) {
    // The attempt that ended keeps its outcome (why it failed) in the cycle's record; one whose process died has
    // none, only the run's error the next process to open the store wrote (recoverOrphans).
    const why = state.outcome ?? (last.status === 'running' ? null : last.error);
    const ended = why ? [{ at: last.finishedAt ?? Date.now(), outcome: why }] : [];
    const { outcome: _outcome, ...rest } = state;
    const next = { ...rest, resumed: state.resumed + 1, earlier: [...(state.earlier ?? []), ...ended] };
    store.transaction(() => {
      store.loopRuns.reopen(last.id);
      store.loopRuns.setDetail(last.id, next, last.step ?? null);
    });
    return { id: last.id, state: next, resumed: true };
  }
  const cycle = (state?.cycle ?? cycleNumber(last?.detail) ?? 0) + 1;
  const fresh: CycleState = { cycle, started_at: Date.now(), resumed: 0, stages: {} };
  return { id: store.loopRuns.start(fresh), state: fresh, resumed: false };
}

export function saveCycle(store: Store, id: string, state: CycleState, step: Stage | null): void {
  store.loopRuns.setDetail(id, state, step);
}

/** The latest cycles; one whose state does not parse is listed with its number and no stages. */
export function cycles(store: Store, limit: number): (RunRecord & { state: CycleState })[] {
  return store.loopRuns.latest(limit).map((r) => ({
    ...r,
    state: readCycle(r.detail) ?? {
      cycle: cycleNumber(r.detail) ?? 0,
      started_at: r.startedAt,
      resumed: 0,
      stages: {},
    },
  }));
}

const cycleNumber = (detail: Record<string, unknown> | undefined) =>
  typeof detail?.cycle === 'number' ? detail.cycle : undefined;
