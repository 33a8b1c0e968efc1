import type { RLConfig } from '../config/schema.js';
import type { ToolRunner } from '../orchestrator/types.js';
import { ResourceSetRepository } from '../store/resource-sets.js';
import { EVAL_SOURCE } from '../store/rollouts.js';
import type { EvalResult, Store } from '../store/index.js';
import type { Task } from '../tasks/types.js';
import { runRollout, type RolloutSummary } from './rollout.js';
import type { TeamSetup } from './team.js';

export interface PairedRunInput {
  store: Store;
  evalRunId: string;
  config: RLConfig;
  tools: ToolRunner;
  baseline: TeamSetup;
  candidate: TeamSetup;
  tasks: { task: Task; hash: string }[];
  seeds: number[];
  settingsHash: string;
  concurrency: number;
  signal: AbortSignal;
  onProgress?: (p: PairedProgress) => void;
}

export interface PairedProgress {
  done: number;
  total: number;
  measured: number;
  reused: number;
  last?: { side: 'baseline' | 'candidate'; taskId: string; reward: number | null };
}

export interface PairedResults {
  baseline: EvalResult[];
  candidate: EvalResult[];
  /** Orchestrations run now, and results reused from earlier evaluations (same set, task, seed and settings). */
  measured: number;
  reused: number;
  cancelled: boolean;
}

interface Job { side: 'baseline' | 'candidate'; setup: TeamSetup; task: Task; hash: string; seed: number }

/**
 * Runs baseline and candidate on every task and seed, interleaved (pair by pair, alternating which goes
 * first) through one pool, so load affects both alike. A result stored for the same set, task content,
 * seed and settings is reused instead of run again; an interrupted orchestration is not stored.
 */
export async function runPairs(input: PairedRunInput): Promise<PairedResults> {
  const same = ResourceSetRepository.servingHash(input.baseline.set.members) === ResourceSetRepository.servingHash(input.candidate.set.members);
  const jobs: Job[] = [];
  input.tasks.forEach(({ task, hash }, i) => input.seeds.forEach((seed, j) => {
    const pair: Job[] = [
      { side: 'baseline', setup: input.baseline, task, hash, seed },
      ...(same ? [] : [{ side: 'candidate' as const, setup: input.candidate, task, hash, seed }]),
    ];
    jobs.push(...((i * input.seeds.length + j) % 2 ? pair.reverse() : pair));
  }));
  const results: PairedResults = { baseline: [], candidate: [], measured: 0, reused: 0, cancelled: false };
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < jobs.length && !input.signal.aborted) {
      const job = jobs[next++]!;
      const key = { servingHash: ResourceSetRepository.servingHash(job.setup.set.members), taskHash: job.hash, seed: job.seed, settingsHash: input.settingsHash };
      let result = input.store.evaluations.result(key);
      if (result) results.reused++;
      else {
        const summary = await runRollout(job.task, { store: input.store, runId: null, setup: job.setup, config: input.config, tools: input.tools, signal: input.signal, source: EVAL_SOURCE, seed: job.seed, metadata: { eval_run_id: input.evalRunId, eval_side: job.side } });
        if (summary.status === 'cancelled') continue;
        result = toResult({ ...key, setId: job.setup.set.id }, job.task, summary, input.evalRunId);
        input.store.evaluations.addResult(result);
        results.measured++;
      }
      results[job.side].push(result);
      if (same) results.candidate.push(result);
      input.onProgress?.({ done: ++done, total: jobs.length, measured: results.measured, reused: results.reused, last: { side: job.side, taskId: job.task.id, reward: result.reward } });
    }
  };
  await Promise.all(Array.from({ length: Math.min(input.concurrency, jobs.length) }, worker));
  results.cancelled = input.signal.aborted;
  return results;
}

function toResult(key: Pick<EvalResult, 'servingHash' | 'setId' | 'taskHash' | 'seed' | 'settingsHash'>, task: Task, s: RolloutSummary, evalRunId: string): EvalResult {
  return {
    ...key, taskId: task.id, category: task.category ?? null, rolloutId: s.id, evalRunId, status: s.status,
    reward: s.reward, success: s.quality, consensus: s.consensus, rounds: s.rounds, tokens: s.tokens, wallMs: s.wallMs,
  };
}
