import { randomUUID } from 'node:crypto';
import PgBoss from 'pg-boss';
import { UserError, errorMessage } from '../errors.js';
import type { Store } from './store.js';

export interface QueuedJob<T> {
  id: string;
  data: T;
  retryCount: number;
}

export interface QueueCounts {
  waiting: number;
  active: number;
  completed: number;
  failed: number;
}

/** How long an active job may go without its worker's heartbeat before another worker takes it over. */
export const LEASE_STALE_MS = 30_000;
/** A job just fetched has not taken its lease yet: it is not taken over before this. */
const LEASE_GRACE_MS = 20_000;

/**
 * Work shared by many machines, on pg-boss in the PostgreSQL store: each job is fetched by one worker
 * (SKIP LOCKED), retried when it fails, and expired by pg-boss after `expireInSeconds` as a last resort.
 * A worker holds a lease on each job it runs (a lock in the store with a heartbeat); a job whose worker
 * died is failed by the next worker that looks (reap), so pg-boss hands it to another one at once.
 */
export class JobQueue {
  private constructor(
    private readonly boss: PgBoss,
    private readonly store: Store,
  ) {}

  static async open(store: Store): Promise<JobQueue> {
    const connectionString = store.connection();
    if (!connectionString)
      throw new UserError(
        `the job queue needs a PostgreSQL store; ${store.path} is a SQLite file`,
        'set store.url to a postgres:// URL every machine can reach (see docs/multi-machine.md)',
      );
    const boss = new PgBoss({
      connectionString,
      schema: 'massgen_rl_queue',
      max: 4,
      schedule: false,
      supervise: true,
      application_name: 'massgen-rl-queue',
    });
    let failure: unknown;
    boss.on('error', (err) => {
      failure ??= err;
    });
    try {
      await boss.start();
    } catch (err) {
      throw new UserError(`cannot start the job queue on ${store.path}: ${errorMessage(err)}`);
    }
    if (failure) throw failure;
    return new JobQueue(boss, store);
  }

  /** Puts the jobs on the queue; their ids, in order. */
  async enqueue<T extends object>(
    queue: string,
    jobs: T[],
    opts: { retryLimit: number; expireInSeconds: number },
  ): Promise<string[]> {
    if (!(await this.exists(queue)))
      await this.boss.createQueue(queue, {
        name: queue,
        retryLimit: opts.retryLimit,
        retryDelay: 1,
        expireInSeconds: opts.expireInSeconds,
      });
    const rows = jobs.map((data) => ({
      id: randomUUID(),
      name: queue,
      data,
      retryLimit: opts.retryLimit,
      retryDelay: 1,
      expireInSeconds: opts.expireInSeconds,
    }));
    for (let i = 0; i < rows.length; i += 500) await this.boss.insert(rows.slice(i, i + 500));
    return rows.map((r) => r.id);
  }

  /** How many of these jobs are in each state. */
  async states(queue: string, ids: string[]): Promise<QueueCounts> {
    const res = (await this.boss
      .getDb()
      .executeSql(
        `SELECT state, COUNT(*)::int AS n FROM massgen_rl_queue.job WHERE name = $1 AND id = ANY($2::uuid[]) GROUP BY state`,
        [queue, ids],
      )) as { rows: { state: string; n: number }[] };
    return tally(res.rows);
  }

  async cancel(queue: string, ids: string[]): Promise<void> {
    if (ids.length) await this.boss.cancel(queue, ids);
  }

  /** Up to n jobs for this worker; each comes with its lease taken. */
  async fetch<T>(queue: string, n: number): Promise<QueuedJob<T>[]> {
    if (!(await this.exists(queue))) return [];
    const jobs = await this.boss.fetch<T>(queue, { batchSize: n, includeMetadata: true });
    return jobs.map((j) => ({ id: j.id, data: j.data, retryCount: j.retryCount }));
  }

  async complete(queue: string, id: string, output: object = {}): Promise<void> {
    await this.boss.complete(queue, id, output);
  }

  async fail(queue: string, id: string, reason: string): Promise<void> {
    await this.boss.fail(queue, id, { reason });
  }

  /** Fails the active jobs whose worker's lease went stale (a dead process, or a silent machine): pg-boss retries them. */
  async reap(queue: string, now = Date.now()): Promise<string[]> {
    if (!(await this.exists(queue))) return [];
    const active = (await this.boss
      .getDb()
      .executeSql(
        `SELECT id::text AS id, EXTRACT(EPOCH FROM started_on) * 1000 AS started FROM massgen_rl_queue.job WHERE name = $1 AND state = 'active'`,
        [queue],
      )) as { rows: { id: string; started: number }[] };
    const reaped: string[] = [];
    for (const job of active.rows) {
      const holder = this.store.locks.holder(leaseName(job.id));
      const lost = holder
        ? this.store.locks.isStale(holder, now, LEASE_STALE_MS)
        : now - Number(job.started) > LEASE_GRACE_MS;
      if (!lost) continue;
      await this.fail(
        queue,
        job.id,
        holder ? `worker ${holder.host} pid ${holder.pid} stopped` : 'worker never took its lease',
      );
      reaped.push(job.id);
    }
    return reaped;
  }

  async counts(queue: string): Promise<QueueCounts> {
    if (!(await this.exists(queue))) return { waiting: 0, active: 0, completed: 0, failed: 0 };
    const res = (await this.boss
      .getDb()
      .executeSql(`SELECT state, COUNT(*)::int AS n FROM massgen_rl_queue.job WHERE name = $1 GROUP BY state`, [
        queue,
      ])) as { rows: { state: string; n: number }[] };
    return tally(res.rows);
  }

  async close(): Promise<void> {
    await this.boss.stop({ graceful: false, wait: true });
  }

  private async exists(queue: string): Promise<boolean> {
    return (await this.boss.getQueue(queue)) !== null;
  }
}

function tally(rows: { state: string; n: number }[]): QueueCounts {
  const by = Object.fromEntries(rows.map((r) => [r.state, r.n])) as Record<string, number>;
  return {
    waiting: (by.created ?? 0) + (by.retry ?? 0),
    active: by.active ?? 0,
    completed: by.completed ?? 0,
    failed: (by.failed ?? 0) + (by.cancelled ?? 0),
  };
}

export function leaseName(jobId: string): string {
  return `job:${jobId}`;
}
