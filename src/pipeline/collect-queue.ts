import { setTimeout as sleep } from 'node:timers/promises';
import { UserError } from '../errors.js';
import { runRollout, type RolloutSummary } from '../rollouts/rollout.js';
import { checkTeamInputs, setupTeam, type TeamSetup } from '../rollouts/team.js';
import type { Runtime } from '../runtime/runtime.js';
import { JobQueue, LEASE_STALE_MS, leaseName, TaskConflictError, type QueuedJob, type Rollout, type Store } from '../store/index.js';
import { tasksWithShortfall } from '../tasks/for-run.js';
import { createToolRunner } from '../tools/runner.js';
import { finishIfDone, isAbandoned } from './collect-queue-runs.js';
import { EVAL_QUEUE, runEvalJob, type EvalJob } from './eval-queue.js';

export const COLLECT_QUEUE = 'collect';

interface CollectJob {
  runId: string;
  taskId: string;
  setId: string;
}

export interface EnqueueOptions {
  tasks?: string;
  n?: number;
  split?: 'train' | 'eval' | 'all';
  trigger?: 'collect' | 'loop';
}

export interface EnqueueSummary {
  runId: string;
  tasks: number;
  resourceSet: { id: string; version: number };
}

/** Creates a collect run once and puts one job per task on the shared queue, for `collect --worker` processes. */
export async function enqueueCollect(rt: Runtime, opts: EnqueueOptions = {}): Promise<EnqueueSummary> {
  const { config } = rt;
  const split = opts.split ?? config.collect.split;
  const { tasks } = tasksWithShortfall(config.tasks, rt.paths.baseDir, { spec: opts.tasks, n: opts.n ?? config.collect.n, split });
  if (!tasks.length) throw new UserError(`no ${split === 'all' ? '' : `${split}-split `}tasks to run`, 'check tasks.sources and tasks.split.eval_fraction, or pass --split all');
  checkTeamInputs(rt);
  const store = rt.store();
  if (!store.connection()) throw new UserError('collect --enqueue needs a PostgreSQL store that the workers share', 'set store.url (see README: More than one machine)');
  const conflicts = store.tasks.conflicts(tasks);
  if (conflicts.length) throw new TaskConflictError(conflicts);
  const queue = await JobQueue.open(store);
  try {
    const set = (await setupTeam(rt, rt.production(opts.trigger ?? 'collect'))).set;
    await store.write(() => store.tasks.upsertMany(tasks));
    const runId = await store.write(() => {
      const id = store.collectRuns.start({ tasks: opts.tasks ?? config.tasks.sources, n: tasks.length, split, queue: true, set: set.id }, { config_hash: rt.loaded.hash });
      store.collectRuns.disown(id);
      return id;
    });
    await queue.enqueue<CollectJob>(COLLECT_QUEUE, tasks.map((t) => ({ runId, taskId: t.id, setId: set.id })), { retryLimit: config.queue.retries, expireInSeconds: config.queue.expire_s });
    return { runId, tasks: tasks.length, resourceSet: { id: set.id, version: set.version } };
  } finally {
    await queue.close();
  }
}

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
  const setups = new Map<string, Promise<TeamSetup>>();
  const setupFor = (setId: string) => {
    let s = setups.get(setId);
    if (!s) {
      const set = store.sets.get(setId);
      if (!set) throw new Error(`resource set ${setId} of a queued job is not in the store`);
      s = setupTeam(rt, set);
      setups.set(setId, s);
    }
    return s;
  };
  const out: WorkerSummary = { jobs: 0, completed: 0, failed: 0, cancelled: 0, alreadyRecorded: 0, reaped: 0, runsFinished: [], measured: 0, refused: [] };
  const running = new Set<Promise<void>>();
  const evalDeps = { rt, store, tools, signal, setups: new Map() };
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

interface JobDeps {
  rt: Runtime;
  setupFor: (setId: string) => Promise<TeamSetup>;
  tools: ReturnType<typeof createToolRunner>;
  signal: AbortSignal;
}

/**
 * fn under the job's lease: a lock in the store kept fresh by a heartbeat, which other workers read to
 * find dead ones. fn's signal aborts when this worker stops or the lease was taken over; undefined when
 * another worker holds the lease.
 */
async function underLease<T>(store: Store, jobId: string, signal: AbortSignal, fn: (signal: AbortSignal) => Promise<T>): Promise<T | undefined> {
  const taken = store.locks.acquire(leaseName(jobId), LEASE_STALE_MS);
  if (!('lock' in taken)) return undefined;
  const lease = taken.lock;
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  signal.addEventListener('abort', onAbort);
  const beat = setInterval(() => { if (!lease.heartbeat()) stop.abort(); }, 5_000);
  try {
    return await fn(stop.signal);
  } finally {
    clearInterval(beat);
    signal.removeEventListener('abort', onAbort);
    lease.release();
  }
}

/** One job: skipped when an earlier attempt recorded it, its abandoned attempts discarded, then run. */
async function runOne(store: Store, queue: JobQueue, job: QueuedJob<CollectJob>, d: JobDeps): Promise<RolloutSummary | 'recorded' | 'interrupted'> {
  const r = await underLease(store, job.id, d.signal, (signal) => runCollectJob(store, queue, job, { ...d, signal }));
  return r ?? 'interrupted';
}

async function runCollectJob(store: Store, queue: JobQueue, job: QueuedJob<CollectJob>, d: JobDeps): Promise<RolloutSummary | 'recorded' | 'interrupted'> {
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
    store, runId, setup: await d.setupFor(setId), config: d.rt.config, tools: d.tools, signal: d.signal,
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
