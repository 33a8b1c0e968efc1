import type { RLConfig } from '../../config/schema.js';
import { UserError } from '../../errors.js';
import type { Component } from '../../prompt-opt/index.js';
import type { ResourceSet, Store } from '../../store/index.js';
import type { PromptOptState } from './state.js';

/** A fresh run's state (its evaluation run, where every result it measures is recorded, started now). */
export function newPromptOptState(
  store: Store,
  base: ResourceSet,
  comps: readonly Component[],
  o: {
    valTasks: string[];
    poolTasks: string[];
    seeds: number[];
    metric: PromptOptState['metric'];
    budget: RLConfig['prompt_opt']['budget'];
  },
): PromptOptState {
  const evalRunId = store.evaluations.startRun(
    base.id,
    base.id,
    { apo: true, val_tasks: o.valTasks, seeds: o.seeds },
    'apo',
  );
  return {
    algo: 'apo',
    components: comps.map((c) => ({ ...c })),
    baseSet: base.id,
    evalRunId,
    valTasks: o.valTasks,
    poolTasks: o.poolTasks,
    seeds: o.seeds,
    metric: o.metric,
    step: 0,
    candidates: [],
    proposals: [],
    spent: { optimizerTokens: 0, wallMs: 0 },
    inFlightTokens: 0,
    budget: {
      rollouts: o.budget.rollouts,
      optimizerTokens: o.budget.optimizer_tokens,
      wallMs: o.budget.wall_min * 60_000,
    },
    done: false,
    stopReason: null,
  };
}

/**
 * The run `--resume` continues: the named one, or the newest prompt-optimization run that stopped before
 * its end (interrupted, killed, failed). Its budgets are the ones it started with.
 */
export function findPromptOptRun(store: Store, ref: true | string): { runId: string; state: PromptOptState } {
  const runs = store.trainingRuns.latest(500).filter((r) => r.detail.algo === 'apo');
  const run =
    ref === true
      ? runs.find((r) => r.status !== 'completed' && r.status !== 'running')
      : runs.find((r) => r.id === ref || r.id.startsWith(ref));
  if (!run)
    throw new UserError(
      ref === true ? 'no stopped prompt-optimization run to resume' : `no prompt-optimization run ${ref}`,
      'start one with `massgen-rl train prompts`',
    );
  if (run.status === 'completed') throw new UserError(`prompt-optimization run ${run.id} completed; nothing to resume`);
  if (run.status === 'running') throw new UserError(`prompt-optimization run ${run.id} is running in another process`);
  const state = run.detail as unknown as PromptOptState;
  // A call in flight when the process died is counted at its worst case.
  state.spent.optimizerTokens += state.inFlightTokens;
  state.inFlightTokens = 0;
  return { runId: run.id, state };
}
