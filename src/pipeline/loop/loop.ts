import os from 'node:os';
import { errorMessage, GateError, UserError } from '../../errors.js';
import { latestCandidate } from '../../evaluation/candidates.js';
import { resolveStart } from '../../resources/training-start.js';
import type { Runtime } from '../../runtime/runtime.js';
import { cycleSteps, openCycle, saveCycle, type CycleState, type Stage } from '../../scheduler/cycles.js';
import type { StageBase, StageContext, StageRecord, StageResult } from '../../scheduler/cycles.js';
import { acquireCycleLock } from '../../scheduler/lock.js';
import { stopLeftover } from '../../trainers/process-group.js';
import { lastCheckpoint, type TrainRunDetail } from '../../trainers/resume.js';
import type { CapturedCounts } from '../collect/captured.js';
import { collect } from '../collect/collect.js';
import { enqueueCollect } from '../collect/enqueue.js';
import { awaitQueuedRun } from '../collect/queue-runs.js';
import { deploy, latestEvaluation } from '../deploy/deploy.js';
import { evaluate } from '../evaluate/evaluate.js';
import { writeReport } from '../evaluate/report.js';
import { syncProduction } from '../production-sync.js';
import { trainPrompts } from '../prompt-opt/train-prompts.js';
import { describeReview, reviewProduction } from '../review/review.js';
import { train } from '../train/train.js';
import { stageProfiler } from './cycle-profile.js';
import { evalRecord, evalRolesStage, trainRolesStage } from './roles.js';

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
    const { steps, impliedReview } = cycleSteps(loop.steps);
    const implied =
      'loop.steps lists collect without review: review runs after it '
      + '(collect reviewed production itself before); add review to loop.steps';
    if (impliedReview) opts.onStage?.('review', implied);
    const { id, state, resumed } = openCycle(store, steps);
    const cycleTimer = AbortSignal.timeout(loop.max_runtime_min * 60_000);
    const signal = AbortSignal.any([lock.lost, cycleTimer, ...(opts.signal ? [opts.signal] : [])]);
    const done = (status: CycleResult['status'], outcome: string): CycleResult => {
      state.outcome = outcome;
      saveCycle(store, id, state, null);
      store.loopRuns.finish(id, status, undefined, status === 'completed' ? undefined : outcome);
      return { loopRunId: id, cycle: state.cycle, resumed, status, stages: state.stages, outcome };
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
        const stageFn: StageFn<S> = STAGES[stage];
        await record(await stageFn(rt, state, { signal: stageSignal, note: (m) => opts.onStage?.(stage, m), save }));
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
        await record({ status: 'failed', reason: errorMessage(err) });
        return done('failed', `${stage} failed: ${errorMessage(err)}`);
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

type StageFn<S extends Stage> = (rt: Runtime, state: CycleState, c: StageContext<S>) => Promise<StageResult<S>>;

const STAGES: { [S in Stage]: StageFn<S> } = {
  async collect(rt, state, c) {
    // Captured traffic is taken here: there are no orchestrations to spread over workers.
    if (rt.config.queue.distributed && rt.config.collect.source !== 'gateway') return collectOnWorkers(rt, state, c);
    const s = await collect(rt, {
      n: rt.config.loop.collect_n,
      signal: c.signal,
      trigger: 'loop',
      onStage: c.note,
      onProgress: (p) =>
        c.note(
          `${p.done}/${p.total} done, ${p.failed} failed, last ${p.last?.taskId ?? ''} reward ${p.last?.reward?.toFixed(2) ?? '—'}`,
        ),
    });
    if (s.status === 'cancelled') throw c.signal.reason ?? new Error('collect interrupted');
    return {
      status: 'done',
      run_id: s.runId,
      tasks: s.tasks,
      completed: s.completed,
      failed: s.failed,
      mean_reward: s.meanReward,
      tokens: s.tokens,
      set: s.resourceSet.version,
      ...(s.captured ? { captured: capturedRecord(s.captured) } : {}),
      ...(s.curriculum
        ? {
            curriculum: {
              recorded: s.curriculum.recorded,
              advanced: s.curriculum.advanced.map((a) => ({ suite: a.suite, level: a.level, reason: a.reason })),
            },
          }
        : {}),
    };
  },

  async review(rt) {
    const r = await reviewProduction(rt, 'loop');
    const detail = describeReview(r).join('; ');
    const verdicts = { canary: r.canary?.verdict ?? null, watch: r.watch?.verdict ?? null };
    return { status: 'done', ...verdicts, ...(detail ? { detail } : {}) };
  },

  async train(rt, state, c) {
    if (rt.config.roles) return trainRolesStage(rt, state, c);
    const rec = state.stages.train;
    const store = rt.store();
    const prior = rec?.training_run_id ? store.trainingRuns.get(rec.training_run_id) : undefined;
    if (prior?.status === 'completed') return trained(rt, prior.id, String(prior.result?.checkpoint_id ?? ''));
    const algo = rt.config.train.algo;
    const detail = prior?.detail as TrainRunDetail | undefined;
    if (detail) await stopLeftover(detail.trainer_pid, detail.trainer_host, os.hostname());
    // A run over several machines starts afresh: the others hold no checkpoint to resume from.
    const resumable =
      rt.config.train.num_machines === 1
      && prior
      && (prior.status === 'cancelled' || prior.status === 'failed')
      && detail?.output_dir
      && lastCheckpoint(detail.output_dir)
        ? prior
        : undefined;
    if (!resumable) {
      const start = resolveStart(
        store,
        { baseModel: rt.config.train.base_model, weights: (ref, where) => rt.weights(ref, where) },
        algo,
      );
      const fresh = store.rollouts.countCollectedAfter(start.watermark);
      if (fresh < rt.config.loop.min_new_traces)
        return {
          status: 'skipped',
          reason: `${fresh} new completed rollout(s) since the last ${algo} run on ${start.line}; loop.min_new_traces is ${rt.config.loop.min_new_traces}`,
        };
    }
    try {
      const r = await train(rt, {
        ...(resumable ? { resume: resumable.id } : {}),
        signal: c.signal,
        onStage: c.note,
        onRunStart: (runId) => c.save({ training_run_id: runId }),
        onProgress: (p) =>
          c.note(`step ${p.step}${p.totalSteps ? `/${p.totalSteps}` : ''} loss ${p.loss?.toFixed(4) ?? '—'}`),
      });
      return {
        status: 'done',
        training_run_id: r.runId,
        checkpoint_id: r.checkpoint.id,
        weights: `${r.weight.name} v${r.weight.version}`,
        candidate_set: r.candidateSet?.id ?? null,
        steps: r.steps,
        final_loss: typeof r.metrics.final_loss === 'number' ? r.metrics.final_loss : null,
      };
    } catch (err) {
      if (c.signal.aborted) throw err;
      // Too little or too poor data is a reason to wait for the next cycle, not a failure.
      if (err instanceof UserError && (err instanceof GateError || /^no \w+ examples/.test(err.message)))
        return { status: 'skipped', reason: err.message.split('\n')[0]! };
      throw err;
    }
  },

  async prompt_opt(rt, state, c) {
    const store = rt.store();
    const rec = state.stages.prompt_opt;
    const prior = rec?.training_run_id ? store.trainingRuns.get(rec.training_run_id) : undefined;
    if (prior?.status === 'completed')
      return {
        status: 'done',
        training_run_id: prior.id,
        candidate_set: str(prior.result?.candidate_set),
        reason: 'taken from the completed prompt-optimization run',
      };
    const r = await trainPrompts(rt, {
      ...(prior && prior.status !== 'running' ? { resume: prior.id } : {}),
      trigger: 'loop',
      signal: c.signal,
      onStage: c.note,
      onRunStart: (runId) => c.save({ training_run_id: runId }),
      onStep: (p, f, spent) =>
        c.note(
          `round ${p.step + 1}: ${p.kind} ${p.outcome}; best ${f.best ?? '—'} ${Number.isFinite(f.bestMean) ? f.bestMean.toFixed(3) : '—'}; ${spent.rollouts} rollouts`,
        ),
    });
    if (r.status === 'cancelled') throw c.signal.reason ?? new Error('prompt optimization interrupted');
    return {
      status: 'done',
      training_run_id: r.runId,
      candidate_set: r.candidateSet?.id ?? null,
      best: r.best?.id ?? null,
      best_mean: r.best?.valMean ?? null,
      baseline_mean: r.baselineMean,
      rollouts: r.spent.rollouts,
      optimizer_tokens: r.spent.optimizerTokens,
      ...(r.candidateSet ? {} : { reason: 'no candidate beat the current prompts' }),
    };
  },

  async eval(rt, state, c) {
    const candidate = candidateOf(rt, state);
    if (!candidate) return { status: 'skipped', reason: 'no new candidate in this cycle' };
    if (rt.config.roles) return evalRolesStage(rt, candidate, c);
    const s = await evaluate(rt, {
      candidate,
      trigger: 'loop',
      signal: c.signal,
      onStage: c.note,
      onProgress: (p) =>
        c.note(
          `${p.done}/${p.total} (${p.reused} reused), last ${p.last?.side ?? ''} ${p.last?.taskId ?? ''} reward ${p.last?.reward?.toFixed(2) ?? '—'}`,
        ),
    });
    if (s.status === 'cancelled') throw c.signal.reason ?? new Error('evaluation interrupted');
    return evalRecord(s);
  },

  async deploy(rt, state) {
    const ev = state.stages.eval;
    if (!ev || ev.status !== 'done' || !ev.candidate_set)
      return { status: 'skipped', reason: 'nothing was evaluated in this cycle' };
    if (ev.roles && !ev.promoted_roles?.length)
      return { status: 'done', action: 'not promoted', reason: ev.reason ?? 'no changed role passed its gates' };
    const candidate = ev.candidate_set;
    const production = syncProduction(rt, 'loop');
    if (production.id === candidate)
      return { status: 'done', action: 'promoted', reason: 'production is this candidate already' };
    if (!rt.config.deploy.auto)
      return { status: 'skipped', action: 'not promoted', reason: 'deploy.auto is false: evaluated and reported only' };
    if (!latestEvaluation(rt, production, candidate))
      return {
        status: 'done',
        action: 'not promoted',
        reason: `production changed since the evaluation (now set v${production.version}); the next cycle evaluates again`,
      };
    const fraction = rt.config.deploy.canary.fraction;
    const r = await deploy(rt, {
      candidate: `set:${rt.store().sets.get(candidate)!.version}`,
      trigger: 'loop',
      // a staged rollout always goes through the canary, from its first stage
      ...(rt.config.deploy.rollout ? { canary: true as const } : fraction > 0 ? { canary: fraction } : {}),
    });
    return {
      status: 'done',
      action: r.action,
      audit_id: r.auditId,
      eval_run_id: r.evalRunId,
      gates: r.gates.map((g) => ({ gate: g.gate, passed: g.passed, detail: g.detail })),
    };
  },
};

/**
 * The candidate this cycle evaluates: its prompt optimization's when that found one, else its training
 * run's; with neither stage in loop.steps, the newest candidate (as `eval` without --candidate picks it).
 */
function candidateOf(rt: Runtime, state: CycleState): string | undefined {
  for (const stage of ['prompt_opt', 'train'] as const) {
    const s = state.stages[stage];
    if (s?.status === 'done' && s.candidate_set) return s.candidate_set;
  }
  if (rt.config.loop.steps.includes('train') || rt.config.loop.steps.includes('prompt_opt')) return undefined;
  const production = syncProduction(rt, 'loop');
  try {
    return latestCandidate(rt.setContext(), production).id;
  } catch (err) {
    if (err instanceof UserError) return undefined;
    throw err;
  }
}

function trained(rt: Runtime, runId: string, checkpointId: string): StageResult<'train'> {
  const sets = rt
    .store()
    .sets.list(500)
    .filter((s) => s.origin.training_run_id === runId);
  return {
    status: 'done',
    training_run_id: runId,
    checkpoint_id: checkpointId,
    candidate_set: sets.at(-1)?.id ?? null,
    reason: 'taken from the completed training run',
  };
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

/** The collect stage spread over `collect --worker` machines: the run queued once (its id saved, so a resumed cycle waits for it), then waited for. */
async function collectOnWorkers(
  rt: Runtime,
  state: CycleState,
  c: StageContext<'collect'>,
): Promise<StageResult<'collect'>> {
  const saved = state.stages.collect?.run_id;
  const store = rt.store();
  let runId = saved && store.collectRuns.get(saved) ? saved : undefined;
  if (!runId) {
    runId = (await enqueueCollect(rt, { n: rt.config.loop.collect_n, trigger: 'loop' })).runId;
    c.save({ run_id: runId });
  }
  const run = await awaitQueuedRun(store, runId, c.signal, c.note);
  const r = (run.result ?? {}) as {
    tasks?: number;
    completed?: number;
    failed?: number;
    meanReward?: number | null;
    tokens?: number;
  };
  return {
    status: 'done',
    run_id: runId,
    tasks: r.tasks ?? 0,
    completed: r.completed ?? 0,
    failed: r.failed ?? 0,
    mean_reward: r.meanReward ?? null,
    tokens: r.tokens ?? 0,
    on_workers: true,
  };
}

/** A gateway collect's counts as the loop records them: its tasks are sessions, some held back. */
function capturedRecord(c: CapturedCounts) {
  return { taken: c.taken, held_out: c.heldOut, waiting: c.waiting, joined: c.joined, scored: c.scored };
}

const str = (x: unknown) => (typeof x === 'string' ? x : null);
