import type { EvalResult } from '../store/index.js';
import type { Task } from '../tasks/types.js';
import { measure, type MeasureContext } from './measure.js';
import type { TeamSetup } from './team.js';

export interface ScoreBatchInput extends MeasureContext {
  setup: TeamSetup;
  tasks: readonly { task: Task; hash: string }[];
  seeds: readonly number[];
  concurrency: number;
  /** Claims one orchestration of the budget before it starts; false: the budget is spent. */
  claim: () => boolean;
  metadata?: Record<string, unknown>;
  onResult?: (r: EvalResult, reused: boolean) => void;
}

export interface ScoreBatchResult {
  /** Results by `${task id}:${seed}`, measured now or reused, in task × seed order. */
  results: Map<string, EvalResult>;
  measured: number;
  reused: number;
  /** Every task and seed has a result (false: the budget, the time or a cancellation stopped it). */
  complete: boolean;
}

/**
 * One resource set on every task and seed: a result stored for the same served resources, task, seed and
 * settings is reused (free); anything else is a real orchestration, run only after the budget allows it.
 */
export async function scoreBatch(input: ScoreBatchInput): Promise<ScoreBatchResult> {
  const jobs = input.tasks.flatMap(({ task, hash }) => input.seeds.map((seed) => ({ task, hash, seed })));
  const found: (EvalResult | undefined)[] = [];
  const out: ScoreBatchResult = { results: new Map(), measured: 0, reused: 0, complete: false };
  let next = 0;
  let stopped = false;
  const worker = async () => {
    while (next < jobs.length && !stopped && !input.signal.aborted) {
      const i = next++;
      const job = jobs[i]!;
      const m = await measure(input, input.setup, job.task, job.hash, job.seed, {
        metadata: input.metadata,
        allow: input.claim,
      });
      if ('declined' in m) stopped = true;
      if (!('result' in m)) continue;
      if (m.reused) out.reused++;
      else out.measured++;
      found[i] = m.result;
      input.onResult?.(m.result, m.reused);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(input.concurrency, jobs.length)) }, worker));
  // In task × seed order whatever order they finished in: what reads them (the optimizer's examples) stays the same.
  jobs.forEach((j, i) => found[i] && out.results.set(`${j.task.id}:${j.seed}`, found[i]));
  out.complete = out.results.size === jobs.length;
  return out;
}
