import os from 'node:os';
import { InterruptedError, UserError } from '../errors.js';
import { pythonEnv } from '../python/module.js';
import { registerCheckpoint, type RegisteredCheckpoint } from '../resources/checkpoints.js';
import type { Store } from '../store/index.js';
import type { TrainRunDetail } from './resume.js';
import { gpuEnv, runTrainer, type StepEvent, type TrainerCommand, type TrainerOutcome } from './runner.js';
import { stepCompletionTokens } from './trainer-events.js';

export interface TrainProgress {
  step: number;
  totalSteps: number | null;
  loss: number | null;
  reward: number | null;
  /** GRPO: the step's mean completion tokens (TRL's completions/mean_length); null for the others. */
  completionTokens: number | null;
  etaMs: number | null;
}

export interface ExecuteInput {
  store: Store;
  runId: string;
  detail: TrainRunDetail;
  command: TrainerCommand;
  gpus: string;
  baseModel: string;
  timeoutMs?: number;
  signal?: AbortSignal;
  onProgress?: (p: TrainProgress) => void;
  onStage?: (message: string) => void;
  /** Extra environment for the trainer (tests, the reward bridge). */
  env?: NodeJS.ProcessEnv;
}

export interface ExecuteResult {
  outcome: TrainerOutcome;
  registered: RegisteredCheckpoint;
  metrics: Record<string, unknown>;
}

/**
 * Runs the trainer for a started training run, streams its step metrics to the store, and on success
 * registers the checkpoint with its lineage (one transaction: nothing is half-registered). A stopped
 * run is recorded as cancelled (resumable); a failed one as failed, and both throw.
 */
export async function executeTraining(input: ExecuteInput): Promise<ExecuteResult> {
  const { store, runId, detail } = input;
  const metrics = store.trainingMetrics.writer(runId);
  let firstStepAt: number | undefined;
  let firstStep = 0;
  let outcome: TrainerOutcome;
  try {
    outcome = await runTrainer({
      ...input.command,
      env: pythonEnv({ ...gpuEnv(input.gpus), ...input.env }),
      logFile: detail.log_file,
      signal: input.signal,
      timeoutMs: input.timeoutMs,
      // Recorded for `train --resume` and the cycle lock; a store locked at that moment must not stop the run.
      onSpawn: (pid) =>
        void store
          .retrying(() =>
            store.trainingRuns.setDetail(runId, {
              ...detail,
              trainer_pid: pid,
              trainer_host: os.hostname(),
            } as unknown as Record<string, unknown>),
          )
          .catch(() => undefined),
      onEvent: (ev) => {
        if (ev.event === 'progress') input.onStage?.(ev.message);
        if (ev.event !== 'step') return;
        metrics.add(ev.step, stepMetrics(ev));
        if (firstStepAt === undefined) [firstStepAt, firstStep] = [Date.now(), ev.step - 1];
        const done = ev.step - firstStep;
        const rate = done > 0 ? (Date.now() - firstStepAt) / done : null;
        const etaMs = ev.total_steps && rate !== null && done > 1 ? rate * Math.max(0, ev.total_steps - ev.step) : null;
        input.onProgress?.({
          step: ev.step,
          totalSteps: ev.total_steps,
          loss: ev.loss,
          reward: ev.reward,
          completionTokens: stepCompletionTokens(ev),
          etaMs,
        });
      },
    });
  } catch (err) {
    safeFlush(metrics);
    store.trainingRuns.finish(runId, 'failed', undefined, (err as Error).message);
    throw err;
  }
  // The closing writes wait out a store another process holds locked (store.retrying), as collect's do: a
  // finished training run is not thrown away for a lock held a few seconds.
  await store.retrying(() => metrics.flush()).catch(() => undefined);
  const last = outcome.steps.at(-1);
  const summary = {
    steps: outcome.stepCount,
    last_step: last?.step ?? null,
    duration_ms: outcome.durationMs,
    exit_code: outcome.exitCode,
  };
  if (outcome.status === 'interrupted') {
    const at = outcome.lastCheckpoint
      ? ` at step ${outcome.lastCheckpoint.step ?? '?'} (${outcome.lastCheckpoint.path})`
      : '';
    store.trainingRuns.finish(
      runId,
      'cancelled',
      { ...summary, checkpoint: outcome.lastCheckpoint?.path ?? null },
      outcome.error,
    );
    throw new InterruptedError(`training stopped${at}; continue it with \`massgen-rl train --resume ${runId}\``);
  }
  if (outcome.status !== 'completed' || !outcome.done) {
    store.trainingRuns.finish(runId, 'failed', summary, outcome.error);
    throw new UserError(
      `the ${detail.algo} trainer failed: ${outcome.error ?? 'unknown error'}`,
      `full log: ${detail.log_file}`,
    );
  }
  const done = outcome.done;
  const final = {
    ...done.metrics,
    ...lastStepMetrics(last),
    steps: outcome.stepCount,
    dataset_rows: detail.dataset.rows,
  };
  let registered: RegisteredCheckpoint;
  try {
    registered = await store.retrying(() =>
      registerCheckpoint(store, {
        path: done.path,
        algo: detail.algo,
        adapter: done.adapter,
        baseModel: input.baseModel,
        baseResourceId: detail.start.checkpoint_id ? null : detail.start.resource_id,
        basePath: detail.start.adapter ? detail.start.base_dir : detail.start.dir,
        parentId: detail.start.checkpoint_id,
        trainingRunId: runId,
        datasetHash: detail.dataset.hash,
        watermark: detail.dataset.watermark.to,
        configHash: detail.config_hash,
        metrics: final,
        name: detail.start.line,
        metadata: { training_run_id: runId, dataset_dir: detail.dataset.dir },
      }),
    );
  } catch (err) {
    const why = `registering the checkpoint failed: ${(err as Error).message}`;
    await store.retrying(() => store.trainingRuns.finish(runId, 'failed', summary, why)).catch(() => undefined);
    throw err;
  }
  await store.retrying(() =>
    store.trainingRuns.finish(runId, 'completed', { ...final, checkpoint_id: registered.checkpoint.id }),
  );
  return { outcome, registered, metrics: final };
}

function stepMetrics(ev: StepEvent): Record<string, unknown> {
  const { event: _e, step: _s, ...rest } = ev;
  return Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== null && v !== undefined));
}

function lastStepMetrics(last: StepEvent | undefined): Record<string, unknown> {
  if (!last) return {};
  const pick = (k: string, v: unknown) => (typeof v === 'number' ? { [k]: v } : {});
  return { ...pick('final_loss', last.loss), ...pick('final_reward', last.reward), ...pick('final_kl', last.kl) };
}

function safeFlush(w: { flush(): void }): void {
  try {
    w.flush();
  } catch {
    // the run's outcome matters more than its last few metric rows
  }
}
