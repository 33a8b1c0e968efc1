import type { RLConfig } from '../config/schema.js';
import type { ToolRunner } from '../orchestrator/types.js';
import { ResourceSetRepository } from '../store/resource-sets.js';
import { EVAL_SOURCE } from '../store/rollouts.js';
import type { EvalResult, Store } from '../store/index.js';
import type { Task } from '../tasks/types.js';
import { runRollout } from './rollout.js';
import type { TeamSetup } from './team.js';

export interface ScoreBatchInput {
  store: Store;
  config: RLConfig;
  tools: ToolRunner;
  setup: TeamSetup;
  tasks: readonly { task: Task; hash: string }[];
  seeds: readonly number[];
  settingsHash: string;
  /** The evaluation run results are recorded under. */
  evalRunId: string;
  concurrency: number;
  signal: AbortSignal;
  /** Claims one orchestration of the budget before it starts; false: the budget is spent. */
  claim: () => boolean;
  metadata?: Record<string, unknown>;
  onResult?: (r: EvalResult, reused: boolean) => void;
}

export interface ScoreBatchResult {
  /** Results by `${taskHash}:${seed}`, measured now or reused. */
  results: Map<string, EvalResult>;
  measured: number;
  reused: number;
  /** Every task and seed has a result (false: the budget, the time or a cancellation stopped it). */
  complete: boolean;
}

export const scoreKey = (taskHash: string, seed: number) => `${taskHash}:${seed}`;

/**
 * One resource set on every task and seed: a result stored for the same served resources, task, seed and
 * settings is reused (free); anything else is a real orchestration, run only after the budget allows it.
 */
export async function scoreBatch(input: ScoreBatchInput): Promise<ScoreBatchResult> {
  const servingHash = ResourceSetRepository.servingHash(input.setup.set.members);
  const jobs = input.tasks.flatMap(({ task, hash }) => input.seeds.map((seed) => ({ task, hash, seed })));
  const out: ScoreBatchResult = { results: new Map(), measured: 0, reused: 0, complete: false };
  let next = 0;
  let stopped = false;
  const worker = async () => {
    while (next < jobs.length && !stopped && !input.signal.aborted) {
      const job = jobs[next++]!;
      const key = { servingHash, taskHash: job.hash, seed: job.seed, settingsHash: input.settingsHash };
      const stored = input.store.evaluations.result(key);
      if (stored) {
        out.reused++;
        out.results.set(scoreKey(job.hash, job.seed), stored);
        input.onResult?.(stored, true);
        continue;
      }
      if (!input.claim()) {
        stopped = true;
        break;
      }
      const s = await runRollout(job.task, {
        store: input.store, runId: null, setup: input.setup, config: input.config, tools: input.tools, signal: input.signal,
        source: EVAL_SOURCE, seed: job.seed, metadata: { eval_run_id: input.evalRunId, ...input.metadata },
      });
      if (s.status === 'cancelled') continue;
      const r: EvalResult = {
        ...key, setId: input.setup.set.id, taskId: job.task.id, category: job.task.category ?? null, rolloutId: s.id, evalRunId: input.evalRunId,
        status: s.status, reward: s.reward, success: s.quality, consensus: s.consensus, rounds: s.rounds, tokens: s.tokens, wallMs: s.wallMs,
      };
      input.store.evaluations.addResult(r);
      out.measured++;
      out.results.set(scoreKey(job.hash, job.seed), r);
      input.onResult?.(r, false);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(input.concurrency, jobs.length)) }, worker));
  out.complete = out.results.size === jobs.length;
  return out;
}
