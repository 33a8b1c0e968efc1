import { setTimeout as sleep } from 'node:timers/promises';
import { taskHash } from '../../evaluation/keys.js';
import type { ToolRunner } from '../../orchestrator/types.js';
import { measure } from '../../rollouts/measure.js';
import type { TeamSetup } from '../../rollouts/team.js';
import type { Runtime } from '../../runtime/runtime.js';
import { JobQueue, type QueuedJob, type ResourceSet, type Store } from '../../store/index.js';
import { ResourceSetRepository } from '../../store/resource-sets.js';
import type { Task } from '../../tasks/types.js';

export const EVAL_QUEUE = 'eval';

export interface EvalJob {
  evalRunId: string;
  setId: string;
  side: 'baseline' | 'candidate';
  taskId: string;
  taskHash: string;
  seed: number;
  settingsHash: string;
}

export interface OnWorkersInput {
  evalRunId: string;
  baseline: ResourceSet;
  candidate: ResourceSet;
  tasks: { task: Task; hash: string }[];
  seeds: number[];
  settingsHash: string;
  signal: AbortSignal;
  onStage?: (message: string) => void;
}

/**
 * The orchestrations of an evaluation not measured yet, put on the shared queue and waited for: the
 * workers store each result under its key, so the evaluation that follows finds them all measured
 * (one that failed on every retry is run by the evaluation itself).
 */
export async function measureOnWorkers(
  rt: Runtime,
  input: OnWorkersInput,
): Promise<{ queued: number; failed: number }> {
  const store = rt.store();
  const jobs: EvalJob[] = [];
  for (const [side, set] of [
    ['baseline', input.baseline],
    ['candidate', input.candidate],
  ] as const) {
    const servingHash = ResourceSetRepository.servingHash(set.members);
    for (const { task, hash } of input.tasks) {
      for (const seed of input.seeds) {
        if (store.evaluations.result({ servingHash, taskHash: hash, seed, settingsHash: input.settingsHash })) continue;
        jobs.push({
          evalRunId: input.evalRunId,
          setId: set.id,
          side,
          taskId: task.id,
          taskHash: hash,
          seed,
          settingsHash: input.settingsHash,
        });
      }
    }
  }
  if (!jobs.length) return { queued: 0, failed: 0 };
  const queue = await JobQueue.open(store);
  try {
    const ids = await queue.enqueue(EVAL_QUEUE, jobs, {
      retryLimit: rt.config.queue.retries,
      expireInSeconds: rt.config.queue.expire_s,
    });
    input.onStage?.(
      `${jobs.length} orchestration(s) queued for the workers (\`massgen-rl collect --worker\` on any machine)`,
    );
    for (;;) {
      const c = await queue.states(EVAL_QUEUE, ids);
      if (c.waiting + c.active === 0) return { queued: jobs.length, failed: c.failed };
      if (input.signal.aborted) {
        await queue.cancel(EVAL_QUEUE, ids);
        return { queued: jobs.length, failed: c.failed };
      }
      input.onStage?.(`workers: ${c.completed}/${jobs.length} measured, ${c.active} running, ${c.failed} failed`);
      await sleep(1000, undefined, { signal: input.signal }).catch(() => {});
    }
  } finally {
    await queue.close();
  }
}

export interface EvalJobDeps {
  rt: Runtime;
  store: Store;
  tools: ToolRunner;
  signal: AbortSignal;
  /** The settings hash of this worker's config. */
  settingsHash: string;
  /** The team of a resource set as evaluations run it, set up once; undefined when the set is not in the store. */
  team: (setId: string) => Promise<TeamSetup> | undefined;
}

/** One queued evaluation orchestration; 'retry' when it must go back to the queue, else the reason it cannot run here. */
export async function runEvalJob(
  job: QueuedJob<EvalJob>,
  d: EvalJobDeps,
): Promise<{ ok: true } | { ok: false; retry: boolean; reason: string }> {
  const { data } = job;
  if (d.settingsHash !== data.settingsHash) {
    return {
      ok: false,
      retry: false,
      reason:
        "this worker's config differs from the evaluating machine's (orchestrator, agents, models, tools or rewards): its results would not be comparable",
    };
  }
  const task = d.store.tasks.get(data.taskId);
  if (!task || taskHash(task) !== data.taskHash)
    return { ok: false, retry: false, reason: `task ${data.taskId} is not in the store as the evaluation saw it` };
  const setup = d.team(data.setId);
  if (!setup) return { ok: false, retry: false, reason: `resource set ${data.setId} is not in the store` };
  const m = await measure(
    {
      store: d.store,
      config: d.rt.config,
      tools: d.tools,
      settingsHash: data.settingsHash,
      evalRunId: data.evalRunId,
      signal: d.signal,
    },
    await setup,
    task,
    data.taskHash,
    data.seed,
    { metadata: { eval_side: data.side, queue_job: job.id } },
  );
  return 'cancelled' in m ? { ok: false, retry: true, reason: 'worker stopped' } : { ok: true };
}
