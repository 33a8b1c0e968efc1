import { setTimeout as sleep } from 'node:timers/promises';
import { settingsHash } from '../../evaluation/keys.js';
import { runRollout, type RolloutSummary } from '../../rollouts/rollout.js';
import { onePerDecision, setupTeam, type TeamSetup } from '../../rollouts/team.js';
import type { Runtime } from '../../runtime/runtime.js';
import { JobQueue, type QueuedJob, type ResourceSet, type Rollout, type Store } from '../../store/index.js';
import { createToolRunner } from '../../tools/runner.js';
import { EVAL_QUEUE, runEvalJob, type EvalJob } from '../evaluate/queue.js';
import { recordCurriculum } from './curriculum.js';
import { COLLECT_QUEUE, type CollectJob } from './enqueue.js';
import { underLease } from './queue-lease.js';
import { finishIfDone, isAbandoned } from './queue-runs.js';

export interface WorkerOptions {
  concurrency?: number;
  /** Keep waiting for new jobs when the queue is empty (a standing worker); else stop once no job is left. */
  wait?: boolean;
  signal?: AbortSignal;
  onJob?: (summary: RolloutSummary & { jobId: string; runId: string }) => void;
}

export interface WorkerSummary {
  jobs: number;
  completed: number;
  failed: number;
  cancelled: number;
  /** Jobs already recorded by an earlier attempt (its worker died after recording): completed without running. */
  alreadyRecorded: number;
  /** Jobs of dead workers this worker handed back to the queue. */
  reaped: number;
  runsFinished: string[];
  /** Evaluation orchestrations measured and stored. */
  measured: number;
  /** Why jobs were refused here (e.g. this machine's config differs from the evaluating machine's). */
  refused: string[];
}

/** Takes collect jobs from the shared queue and records their rollouts until none is left (or, with wait, until stopped). */
export async function collectWorker(rt: Runtime, opts: WorkerOptions = {}): Promise<WorkerSummary> {
  const store = rt.store();
  const queue = await JobQueue.open(store);
  const signal = opts.signal ?? new AbortController().signal;
  const limit = opts.concurrency ?? rt.config.collect.concurrency;
  const tools = createToolRunner(rt.config.tools, rt.paths.baseDir);
  const collectTeam = teams(store, (set) => setupTeam(rt, set));
  const setupFor = (setId: string) => {
    const s = collectTeam(setId);
    if (!s) throw new Error(`resource set ${setId} of a queued job is not in the store`);
    return s;
  };
  const out: WorkerSummary = {
    jobs: 0,
    completed: 0,
    failed: 0,
    cancelled: 0,
    alreadyRecorded: 0,
    reaped: 0,
    runsFinished: [],
    measured: 0,
    refused: [],
  };
  const running = new Set<Promise<void>>();
  const evalDeps = {
    rt,
    store,
    tools,
    signal,
    settingsHash: settingsHash(rt.config),
    team: teams(store, (set) => setupTeam(rt, set, 'eval').then(onePerDecision)),
  };
  const runEval = async (job: QueuedJob<EvalJob>) => {
    out.jobs++;
    const r = await underLease(store, job.id, signal, (s) => runEvalJob(job, { ...evalDeps, signal: s }));
    if (r === undefined) return;
    if (r.ok) {
      out.measured++;
      await queue.complete(EVAL_QUEUE, job.id);
    } else {
      if (!r.retry) out.refused.push(r.reason);
      await queue.fail(EVAL_QUEUE, job.id, r.reason);
    }
  };
  const runJob = async (job: QueuedJob<CollectJob>) => {
    out.jobs++;
    const result = await runOne(store, queue, job, { setupFor, tools, signal, rt });
    if (result === 'recorded') out.alreadyRecorded++;
    else if (result !== 'interrupted') {
      out[result.status]++;
      opts.onJob?.({ ...result, jobId: job.id, runId: job.data.runId });
      const task = job.data.curriculum && store.tasks.get(job.data.taskId);
      if (task) await store.write(() => recordCurriculum(rt, store, [task], [result], new Set()));
    }
    if (result !== 'interrupted' && (await finishIfDone(store, job.data.runId))) out.runsFinished.push(job.data.runId);
  };
  try {
    const start = (p: Promise<void>) => {
      const tracked: Promise<void> = p.finally(() => running.delete(tracked));
      running.add(tracked);
    };
    while (!signal.aborted) {
      out.reaped += (await queue.reap(COLLECT_QUEUE)).length + (await queue.reap(EVAL_QUEUE)).length;
      const jobs = running.size < limit ? await queue.fetch<CollectJob>(COLLECT_QUEUE, limit - running.size) : [];
      for (const job of jobs) start(runJob(job));
      const evals = running.size < limit ? await queue.fetch<EvalJob>(EVAL_QUEUE, limit - running.size) : [];
      for (const job of evals) start(runEval(job));
      if (jobs.length || evals.length) continue;
      if (!running.size && !opts.wait) {
        const [c, e] = [await queue.counts(COLLECT_QUEUE), await queue.counts(EVAL_QUEUE)];
        if (c.waiting + c.active + e.waiting + e.active === 0) break;
      }
      await Promise.race([sleep(running.size ? 250 : 1000, undefined, { signal }).catch(() => {}), ...running]);
    }
    await Promise.all(running);
  } finally {
    await queue.close();
  }
  return out;
}

/** The team of each resource set jobs name, set up once per set; undefined when the set is not in the store. */
function teams(
  store: Store,
  setUp: (set: ResourceSet) => Promise<TeamSetup>,
): (setId: string) => Promise<TeamSetup> | undefined {
  const cache = new Map<string, Promise<TeamSetup>>();
  return (setId) => {
    let s = cache.get(setId);
    if (!s) {
      const set = store.sets.get(setId);
      if (!set) return undefined;
      cache.set(setId, (s = setUp(set)));
    }
    return s;
  };
}

interface JobDeps {
  rt: Runtime;
  setupFor: (setId: string) => Promise<TeamSetup>;
  tools: ReturnType<typeof createToolRunner>;
  signal: AbortSignal;
}

/** One job: skipped when an earlier attempt recorded it, its abandoned attempts discarded, then run. */
async function runOne(
  store: Store,
  queue: JobQueue,
  job: QueuedJob<CollectJob>,
  d: JobDeps,
): Promise<RolloutSummary | 'recorded' | 'interrupted'> {
  const r = await underLease(store, job.id, d.signal, (signal) => runCollectJob(store, queue, job, { ...d, signal }));
  return r ?? 'interrupted';
}

async function runCollectJob(
  store: Store,
  queue: JobQueue,
  job: QueuedJob<CollectJob>,
  d: JobDeps,
): Promise<RolloutSummary | 'recorded' | 'interrupted'> {
  const { runId, taskId, setId } = job.data;
  const earlier: Rollout[] = store.rollouts.list({ runId, taskId });
  if (earlier.some((r) => !isAbandoned(r))) {
    await queue.complete(COLLECT_QUEUE, job.id, { recorded: true });
    return 'recorded';
  }
  await store.write(() => earlier.forEach((r) => store.rollouts.discard(r.id)));
  const task = store.tasks.get(taskId);
  if (!task) throw new Error(`task ${taskId} of a queued job is not in the store`);
  const summary = await runRollout(task, {
    store,
    runId,
    setup: await d.setupFor(setId),
    config: d.rt.config,
    tools: d.tools,
    signal: d.signal,
    metadata: { queue_job: job.id, attempt: job.retryCount + 1 },
  });
  // Stopped before it finished: the job goes back to the queue for another worker.
  if (summary.status === 'cancelled') {
    await queue.fail(COLLECT_QUEUE, job.id, 'worker stopped');
    return 'interrupted';
  }
  await queue.complete(COLLECT_QUEUE, job.id, { rollout: summary.id, status: summary.status });
  return summary;
}
