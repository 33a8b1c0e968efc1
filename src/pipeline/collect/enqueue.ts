import { UserError } from '../../errors.js';
import { setupTeam } from '../../rollouts/team.js';
import type { Runtime } from '../../runtime/runtime.js';
import { JobQueue } from '../../store/index.js';
import { syncProduction } from '../production-sync.js';
import { tasksToCollect } from './collect.js';

export const COLLECT_QUEUE = 'collect';

export interface CollectJob {
  runId: string;
  taskId: string;
  setId: string;
  /** Drawn by tasks.curriculum: the worker records production's result toward the suite's level. */
  curriculum?: true;
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
  const { tasks, split } = tasksToCollect(rt, opts);
  const drawnByCurriculum = config.tasks.curriculum.enabled && !opts.tasks;
  const store = rt.store();
  if (!store.connection())
    throw new UserError(
      'collect --enqueue needs a PostgreSQL store that the workers share',
      'set store.url (see docs/multi-machine.md)',
    );
  const queue = await JobQueue.open(store);
  try {
    const set = (await setupTeam(rt, syncProduction(rt, opts.trigger ?? 'collect'))).set;
    await store.write(() => store.tasks.upsertMany(tasks));
    const runId = await store.write(() => {
      const id = store.collectRuns.start(
        { tasks: opts.tasks ?? config.tasks.sources, n: tasks.length, split, queue: true, set: set.id },
        { config_hash: rt.loaded.hash },
      );
      store.collectRuns.disown(id);
      return id;
    });
    await queue.enqueue<CollectJob>(
      COLLECT_QUEUE,
      tasks.map((t) => ({ runId, taskId: t.id, setId: set.id, ...(drawnByCurriculum ? { curriculum: true } : {}) })),
      { retryLimit: config.queue.retries, expireInSeconds: config.queue.expire_s },
    );
    return { runId, tasks: tasks.length, resourceSet: { id: set.id, version: set.version } };
  } finally {
    await queue.close();
  }
}
