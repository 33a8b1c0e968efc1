import os from 'node:os';
import type { Db } from './database.js';

export const HOST = os.hostname();

/** True when a process with this pid is alive on this host (EPERM still means it exists). */
export function pidAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const OWNED_TABLES = ['rollouts', 'collect_runs', 'training_runs', 'eval_runs', 'loop_runs'] as const;

/**
 * Marks rows left 'running' by a process of this host that no longer exists as failed, with a reason.
 * Rows of live processes (another collect or train sharing the store) are left alone.
 */
export function recoverOrphans(db: Db, now = Date.now()): number {
  let recovered = 0;
  for (const table of OWNED_TABLES) {
    const owners = db
      .prepare(`SELECT DISTINCT pid FROM ${table} WHERE status = 'running' AND host = ? AND pid IS NOT NULL`)
      .pluck()
      .all(HOST) as number[];
    const dead = owners.filter((pid) => !pidAlive(pid));
    if (!dead.length) continue;
    const mark = db.prepare(
      `UPDATE ${table} SET status = 'failed', finished_at = ?, error = ? WHERE status = 'running' AND host = ? AND pid = ?`,
    );
    db.transaction(() => {
      for (const pid of dead) {
        const reason = `interrupted: process ${pid} exited while this was running (found at ${new Date(now).toISOString()})`;
        recovered += mark.run(now, reason, HOST, pid).changes;
      }
    }).immediate();
  }
  return recovered;
}
