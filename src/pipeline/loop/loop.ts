import { datasetsDir, removeStaleTemps } from '../../datasets/index.js';
import { errorMessage } from '../../errors.js';
import type { Runtime } from '../../runtime/runtime.js';
import { cycleSteps, openCycle, saveCycle, type CycleState, type Stage } from '../../scheduler/cycles.js';
import type { StageBase, StageRecord, StageResult } from '../../scheduler/cycles.js';
import { acquireCycleLock } from '../../scheduler/lock.js';
import { writeReport } from '../evaluate/report.js';
import { checkRoleSettings } from '../train/roles.js';
import { stageProfiler } from './cycle-profile.js';
import { STAGES, stageInput, type CycleStage } from './stages.js';

export interface CycleOptions {
  signal?: AbortSignal;
  onStage?: (stage: Stage, message: string) => void;
}

export interface CycleResult {
  loopRunId: string;
  cycle: number;
  resumed: boolean;
  status: 'completed' | 'failed' | 'cancelled';
  stages: CycleState['stages'];
  outcome: string;
  /** How earlier attempts of a resumed cycle ended. */
  earlier: NonNullable<CycleState['earlier']>;
}

/**
 * One cycle, collect → review → train → prompt_opt → eval → deploy (loop.steps), under the cross-process cycle
 * lock. The state is saved at every stage change, so a crash, a kill or a time limit resumes the cycle at its
 * stage: a training run is resumed or its registered checkpoint taken, an evaluation reuses what it
 * measured, and deploy only ever promotes the candidate this cycle evaluated against current production.
 */
export async function runCycle(rt: Runtime, opts: CycleOptions = {}): Promise<CycleResult> {
  const store = rt.store();
  const loop = rt.config.loop;
  const lock = acquireCycleLock(store, loop.stale_lock_min * 60_000);
  try {
    removeStaleTemps(datasetsDir(rt.paths.dataDir));
    const { steps, impliedReview } = cycleSteps(loop.steps);
    const implied =
      'loop.steps lists collect without review: review runs after it '
      + '(collect reviewed production itself before); add review to loop.steps';
    if (impliedReview) opts.onStage?.('review', implied);
    if (steps.includes('train')) await checkRoleSettings(rt, opts.signal);
    const { id, state, resumed } = openCycle(store, steps);
    const cycleTimer = AbortSignal.timeout(loop.max_runtime_min * 60_000);
    const signal = AbortSignal.any([lock.lost, cycleTimer, ...(opts.signal ? [opts.signal] : [])]);
    const done = (status: CycleResult['status'], outcome: string): CycleResult => {
      state.outcome = outcome;
      saveCycle(store, id, state, null);
      store.loopRuns.finish(id, status, undefined, status === 'completed' ? undefined : outcome);
      const earlier = state.earlier ?? [];
      return { loopRunId: id, cycle: state.cycle, resumed, status, stages: state.stages, outcome, earlier };
    };
    // Generic in the stage, so each stage's record keeps its own type.
    const run = async <S extends Stage>(stage: S): Promise<CycleResult | undefined> => {
      const previous = state.stages[stage];
      if (previous?.status === 'done' || previous?.status === 'skipped') return undefined;
      // The fields every record holds, or the stage's own: TypeScript cannot see that both fit a generic S.
      const save = (fields: Partial<StageBase> | Partial<StageRecord<S>> | StageResult<S>) => {
        state.stages[stage] = { ...state.stages[stage], ...fields } as StageRecord<S>;
        saveCycle(store, id, state, stage);
      };
      save({ status: 'running', started_at: Date.now() });
      const limit = loop.stage_timeout_min[stage];
      const stageSignal = limit ? AbortSignal.any([signal, AbortSignal.timeout(limit * 60_000)]) : signal;
      const measure = await stageProfiler();
      const record = async (r: Partial<StageBase> | StageResult<S>) =>
        save({ ...r, finished_at: Date.now(), ...(await measure()) });
      try {
        opts.onStage?.(stage, `${stage}…`);
        const run: CycleStage<S> = STAGES[stage];
        const c = { signal: stageSignal, note: (m: string) => opts.onStage?.(stage, m), save };
        await record(await run(rt, stageInput(state, stage), c));
        const r = state.stages[stage]!;
        opts.onStage?.(stage, `${stage}: ${r.status}${r.reason ? ` (${r.reason})` : ''}`);
        return undefined;
      } catch (err) {
        if (stageSignal.aborted) {
          const why = opts.signal?.aborted
            ? 'interrupted'
            : lock.lost.aborted
              ? 'the cycle lock was taken over'
              : cycleTimer.aborted
                ? `loop.max_runtime_min (${loop.max_runtime_min}) reached`
                : `loop.stage_timeout_min.${stage} (${limit}) reached`;
          await record({ status: 'cancelled', reason: why });
          return done('cancelled', `${stage} stopped: ${why}; the next cycle resumes it`);
        }
        // a lock held past busy_timeout_ms is named as such, not as SQLite's "database is locked"
        const why = errorMessage(store.explain(err));
        await record({ status: 'failed', reason: why });
        return done('failed', `${stage} failed: ${why}`);
      }
    };
    for (const stage of steps) {
      const stopped = await run(stage);
      if (stopped) return stopped;
    }
    // The report is written once the cycle is decided, so it shows the deploy and the cycle's numbers.
    const ev = state.stages.eval;
    if (rt.config.eval.report && ev?.status === 'done' && ev.eval_run_id) {
      ev.report = (await writeReport(rt, { evalRunId: ev.eval_run_id })).file;
    }
    return done('completed', outcomeOf(state));
  } finally {
    lock.release();
  }
}

function outcomeOf(state: CycleState): string {
  const d = state.stages.deploy;
  const e = state.stages.eval;
  const gates = e?.failed_gates?.length ? ` (failed gates: ${e.failed_gates.join(', ')})` : '';
  if (d?.status === 'done')
    return `${d.action ?? ''}${d.action === 'not promoted' ? gates : ''}${d.reason ? `: ${d.reason}` : ''}`;
  const skipped = (['deploy', 'eval', 'prompt_opt', 'train', 'collect'] as const)
    .map((s) => state.stages[s])
    .find((s) => s?.status === 'skipped');
  return skipped ? `not promoted: ${skipped.reason ?? 'a stage was skipped'}` : 'completed';
}
