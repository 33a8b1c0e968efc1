import type { RLConfig } from '../config/schema.js';
import type { ToolRunner } from '../orchestrator/types.js';
import type { EvalResult, Store } from '../store/index.js';
import { ResourceSetRepository } from '../store/resource-sets.js';
import { EVAL_SOURCE } from '../store/rollouts.js';
import type { Task } from '../tasks/types.js';
import { runRollout, type RolloutSummary } from './rollout.js';
import type { TeamSetup } from './team.js';

export interface MeasureContext {
  store: Store;
  config: RLConfig;
  tools: ToolRunner;
  settingsHash: string;
  /** The evaluation run results are recorded under. */
  evalRunId: string;
  signal: AbortSignal;
}

export type Measured = { result: EvalResult; reused: boolean } | { cancelled: true } | { declined: true };

/**
 * One set on one task and seed as an evaluation measures it: the stored result for the same served
 * resources, task, seed and settings when there is one; else, when `allow` agrees (a budget), a real
 * orchestration recorded as an evaluation rollout and stored as the result. An interrupted one is not stored.
 */
export async function measure(
  ctx: MeasureContext,
  setup: TeamSetup,
  task: Task,
  taskHash: string,
  seed: number,
  o: {
    metadata?: Record<string, unknown>;
    allow?: () => boolean;
  } = {},
): Promise<Measured> {
  const key = {
    servingHash: ResourceSetRepository.servingHash(setup.set.members),
    taskHash,
    seed,
    settingsHash: ctx.settingsHash,
  };
  const stored = ctx.store.evaluations.result(key);
  if (stored) return { result: stored, reused: true };
  if (o.allow && !o.allow()) return { declined: true };
  const resultOf = (s: RolloutSummary): EvalResult => ({
    ...key,
    setId: setup.set.id,
    taskId: task.id,
    category: task.category ?? null,
    rolloutId: s.id,
    evalRunId: ctx.evalRunId,
    status: s.status,
    reward: s.reward,
    success: s.quality,
    checked: s.checked,
    consensus: s.consensus,
    rounds: s.rounds,
    tokens: s.tokens,
    wallMs: s.wallMs,
  });
  const s = await runRollout(task, {
    store: ctx.store,
    runId: null,
    setup,
    config: ctx.config,
    tools: ctx.tools,
    signal: ctx.signal,
    source: EVAL_SOURCE,
    seed,
    metadata: { eval_run_id: ctx.evalRunId, ...o.metadata },
    // the result is stored with the rollout's closing row: a kill between the two would measure it again
    onClose: (closed) => ctx.store.evaluations.addResult(resultOf(closed)),
  });
  if (s.status === 'cancelled') return { cancelled: true };
  return { result: resultOf(s), reused: false };
}
