// queue is the PostgreSQL store's job queue, so it lives here with the store (queue.distributed needs store.url).
import { z } from 'zod';
import { envName, filePath, HOUR_S, timeoutMs } from '../fields.js';
import type { RuleIssue } from '../rule-issue.js';

export const storeSchema = z.strictObject({
  path: filePath().optional().describe('SQLite file (default: <data_dir>/store.sqlite)'),
  url: z
    .string()
    .regex(/^postgres(ql)?:\/\/[^\s]+$/, 'must be a postgres:// URL, e.g. postgres://massgen@db-host:5432/massgen')
    .optional()
    .describe(
      'a PostgreSQL store every machine can reach, instead of the SQLite file; no password in it (see password_env)',
    ),
  password_env: envName
    .default('PGPASSWORD')
    .describe('the environment variable holding the PostgreSQL password; it never reaches logs or the store'),
  busy_timeout_ms: timeoutMs(HOUR_S).default(15_000),
});

export const queueSchema = z.strictObject({
  distributed: z
    .boolean()
    .default(false)
    .describe(
      'collect and eval stages of loop (and eval) put their orchestrations '
        + 'on the shared queue of the PostgreSQL store and wait for `collect '
        + '--worker` processes on any machine instead of running them themselves',
    ),
  retries: z
    .number()
    .int()
    .min(0)
    .max(20)
    .default(3)
    .describe('times a job is run again after its worker died or stopped'),
  expire_s: z
    .number()
    .int()
    .min(60)
    .max(7 * 24 * 3600)
    .default(4 * 3600)
    .describe(
      'a job active this long is given up by the queue and retried (dead workers are found sooner, by their lease)',
    ),
});

export type StoreConfig = z.output<typeof storeSchema>;
export type QueueConfig = z.output<typeof queueSchema>;

/** A store is a PostgreSQL database or a SQLite file, with no password in the file; the queue needs PostgreSQL. */
export function storeIssues(store: StoreConfig, queue: QueueConfig): RuleIssue[] {
  const issues: RuleIssue[] = [];
  if (store.url && store.path)
    issues.push({
      path: ['store', 'url'],
      message: 'store.url and store.path are exclusive: a store is a PostgreSQL database or a SQLite file',
    });
  if (queue.distributed && !store.url)
    issues.push({
      path: ['queue', 'distributed'],
      message: 'needs store.url: the workers on other machines share a PostgreSQL store and its queue',
    });
  if (store.url && hasPassword(store.url))
    issues.push({
      path: ['store', 'url'],
      message:
        'contains a password; put it in the environment variable '
        + `${store.password_env} (store.password_env) instead`,
    });
  return issues;
}

function hasPassword(url: string): boolean {
  try {
    return new URL(url).password !== '';
  } catch {
    return /\/\/[^/@]*:[^/@]*@/.test(url);
  }
}
