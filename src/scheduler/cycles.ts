import type { LOOP_STEPS } from '../config/schema.js';
import type { RunRecord, Store } from '../store/index.js';

export type Stage = (typeof LOOP_STEPS)[number];

export interface StageRecord {
  status: 'running' | 'done' | 'skipped' | 'failed' | 'cancelled';
  started_at: number;
  finished_at?: number;
  /** Why it was skipped, failed or stopped. */
  reason?: string;
  [key: string]: unknown;
}

/** A loop cycle as persisted in loop_runs.state after every stage change. */
export interface CycleState {
  cycle: number;
  started_at: number;
  /** How many times an interrupted cycle was taken up again. */
  resumed: number;
  stages: Partial<Record<Stage, StageRecord>>;
  outcome?: string;
}

export interface OpenCycle {
  id: string;
  state: CycleState;
  resumed: boolean;
}

/**
 * The cycle to run (the caller holds the cycle lock): the newest one, when it stopped before finishing
 * (its process died, it was interrupted, it ran out of time, or it lost the lock) with a stage left to
 * do; else a new one.
 */
export function openCycle(store: Store, stages: readonly Stage[]): OpenCycle {
  const last = store.loopRuns.latest(1)[0];
  const state = last ? (last.detail as unknown as CycleState) : undefined;
  const finished = (s: StageRecord | undefined) => s?.status === 'done' || s?.status === 'skipped';
  if (last && state?.stages && last.status !== 'completed' && stages.some((s) => !finished(state.stages[s]))) {
    const next = { ...state, resumed: (state.resumed ?? 0) + 1 };
    store.transaction(() => {
      store.loopRuns.reopen(last.id);
      store.loopRuns.setDetail(last.id, next as unknown as Record<string, unknown>, last.step ?? null);
    });
    return { id: last.id, state: next, resumed: true };
  }
  const cycle = (state?.cycle ?? 0) + 1;
  const fresh: CycleState = { cycle, started_at: Date.now(), resumed: 0, stages: {} };
  return { id: store.loopRuns.start(fresh as unknown as Record<string, unknown>), state: fresh, resumed: false };
}

export function saveCycle(store: Store, id: string, state: CycleState, step: Stage | null): void {
  store.loopRuns.setDetail(id, state as unknown as Record<string, unknown>, step);
}

export function cycles(store: Store, limit: number): (RunRecord & { state: CycleState })[] {
  return store.loopRuns.latest(limit).map((r) => ({ ...r, state: r.detail as unknown as CycleState }));
}
