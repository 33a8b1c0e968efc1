import { verifyingFamilies } from '../../config/sections/rewards.js';
import { errorMessage } from '../../errors.js';
import { cycleHistory, type CycleHistoryRow } from '../../report/cycle-history.js';
import type { Runtime } from '../../runtime/runtime.js';
import { nextRuns, startSchedule } from '../../scheduler/cron.js';
import { cycles, cycleSteps, type CycleState } from '../../scheduler/cycles.js';
import { CYCLE_LOCK } from '../../scheduler/lock.js';
import type { LockHolder } from '../../store/index.js';
import { runCycle, type CycleOptions, type CycleResult } from './loop.js';

export interface LoopStatus {
  schedule: string;
  next: string[];
  steps: string[];
  running: LockHolder | null;
  cycles: {
    id: string;
    cycle: number;
    status: string;
    step: string | null;
    startedAt: number;
    finishedAt: number | null;
    outcome: string | null;
    error: string | null;
    stages: CycleState['stages'];
  }[];
  /** The same cycles oldest first, as someone watching many nights reads them: success per suite, the outcome,
   * the headroom mix. */
  history: CycleHistoryRow[];
}

/** The schedule and its next runs, a cycle running now (the lock holder), and the last cycles stage by stage. */
export function loopStatus(rt: Runtime, limit = 10): LoopStatus {
  const { schedule } = rt.config.loop;
  const base = {
    schedule,
    next: nextRuns(schedule, 3).map((d) => d.toISOString()),
    steps: cycleSteps(rt.config.loop.steps).steps,
  };
  if (!rt.storeExists()) return { ...base, running: null, cycles: [], history: [] };
  const store = rt.existingStore();
  return {
    ...base,
    running: store.locks.holder(CYCLE_LOCK) ?? null,
    cycles: cycles(store, limit).map((c) => ({
      id: c.id,
      cycle: c.state.cycle,
      status: c.status,
      step: c.step ?? null,
      startedAt: c.startedAt,
      finishedAt: c.finishedAt,
      outcome: c.state.outcome ?? null,
      error: c.error,
      stages: c.state.stages,
    })),
    history: cycleHistory(store, limit, verifyingFamilies(rt.config.rewards)),
  };
}

export interface ScheduledLoopOptions extends CycleOptions {
  onCycle?: (r: CycleResult) => void;
  onError?: (message: string) => void;
  onWaiting?: (next: Date | null) => void;
  /** Aborting stops the schedule; a running cycle is stopped and resumes at the next start. */
  signal: AbortSignal;
}

/**
 * Runs cycles on loop.schedule in the foreground (for systemd or a container) until the signal aborts.
 * Each cycle gets a fresh runtime (the config is read again, so edits apply from the next cycle); a
 * cycle that fails is reported and the schedule goes on.
 */
export async function runScheduled(
  newRuntime: () => Promise<Runtime>,
  schedule: string,
  opts: ScheduledLoopOptions,
): Promise<void> {
  let schedulerRef: { next(): Date | null } | undefined;
  let running: Promise<void> | undefined;
  const tick = () => (running = cycle());
  const cycle = async () => {
    let rt: Runtime | undefined;
    try {
      rt = await newRuntime();
      opts.onCycle?.(await runCycle(rt, opts));
    } catch (err) {
      opts.onError?.(errorMessage(err));
    } finally {
      await rt?.close().catch(() => {});
      if (!opts.signal.aborted) opts.onWaiting?.(schedulerRef?.next() ?? null);
    }
  };
  const s = startSchedule(schedule, tick, (at) =>
    opts.onError?.(`the cycle due at ${at.toISOString()} was skipped: the previous one is still running`),
  );
  schedulerRef = s;
  opts.onWaiting?.(s.next());
  await new Promise<void>((resolve) => {
    if (opts.signal.aborted) return resolve();
    opts.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await s.stop();
  await running; // an interrupted cycle records where it stopped before the process exits
}
