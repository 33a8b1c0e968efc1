import type { EvalResult } from '../store/index.js';
import { ResourceSetRepository } from '../store/resource-sets.js';
import type { Task } from '../tasks/types.js';
import { pool } from '../util/pool.js';
import { measure, type MeasureContext } from './measure.js';
import type { TeamSetup } from './team.js';

export interface PairedRunInput extends MeasureContext {
  baseline: TeamSetup;
  candidate: TeamSetup;
  tasks: { task: Task; hash: string }[];
  seeds: number[];
  concurrency: number;
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

interface Job {
  side: 'baseline' | 'candidate';
  setup: TeamSetup;
  task: Task;
  hash: string;
  seed: number;
}

/**
 * Runs baseline and candidate on every task and seed, interleaved (pair by pair, alternating which goes
 * first) through one pool, so load affects both alike. A result stored for the same set, task content,
 * seed and settings is reused instead of run again; an interrupted orchestration is not stored.
 */
export async function runPairs(input: PairedRunInput): Promise<PairedResults> {
  const same =
    ResourceSetRepository.servingHash(input.baseline.set.members)
    === ResourceSetRepository.servingHash(input.candidate.set.members);
  const jobs: Job[] = [];
  input.tasks.forEach(({ task, hash }, i) =>
    input.seeds.forEach((seed, j) => {
      const pair: Job[] = [
        { side: 'baseline', setup: input.baseline, task, hash, seed },
        ...(same ? [] : [{ side: 'candidate' as const, setup: input.candidate, task, hash, seed }]),
      ];
      jobs.push(...((i * input.seeds.length + j) % 2 ? pair.reverse() : pair));
    }),
  );
  const results: PairedResults = { baseline: [], candidate: [], measured: 0, reused: 0, cancelled: false };
  let done = 0;
  await pool(jobs, input.concurrency, input.signal, async (job) => {
    const m = await measure(input, job.setup, job.task, job.hash, job.seed, { metadata: { eval_side: job.side } });
    if (!('result' in m)) return;
    const { result } = m;
    if (m.reused) results.reused++;
    else results.measured++;
    results[job.side].push(result);
    if (same) results.candidate.push(result);
    input.onProgress?.({
      done: ++done,
      total: jobs.length,
      measured: results.measured,
      reused: results.reused,
      last: { side: job.side, taskId: job.task.id, reward: result.reward },
    });
  });
  results.cancelled = input.signal.aborted;
  return results;
}
