import { randomUUID } from 'node:crypto';
import type { Db } from './database.js';
import { HOST, pidAlive } from './process-owner.js';

export interface LockHolder {
  name: string;
  pid: number;
  host: string;
  acquiredAt: number;
  heartbeatAt: number;
}

export interface Lock {
  readonly token: string;
  /** Keeps the lock fresh; false when it was taken over (the holder must stop). */
  heartbeat(): boolean;
  release(): void;
}

/**
 * Named locks shared by every process using the store. A lock is stale, and taken over, when its
 * holder is a dead process of this host, or (another host) its heartbeat is older than staleMs.
 */
export class LockRepository {
  /** Tokens this process holds: a lock row of this process with another token is one it failed to delete. */
  private readonly held = new Set<string>();

  constructor(private readonly db: Db) {}

  holder(name: string): LockHolder | undefined {
    return this.row(name)?.holder;
  }

  private row(name: string): { holder: LockHolder; token: string } | undefined {
    const r = this.db.prepare('SELECT * FROM locks WHERE name = ?').get(name) as Record<string, unknown> | undefined;
    return (
      r && {
        token: r.token as string,
        holder: {
          name,
          pid: r.pid as number,
          host: r.host as string,
          acquiredAt: r.acquired_at as number,
          heartbeatAt: r.heartbeat_at as number,
        },
      }
    );
  }

  /** The lock, or undefined with the live holder when another process has it. */
  acquire(name: string, staleMs: number): { lock: Lock; tookOverFrom?: LockHolder } | { held: LockHolder } {
    const token = randomUUID();
    return this.db
      .transaction(() => {
        const now = Date.now();
        const row = this.row(name);
        const current = row?.holder;
        if (row && current && !this.isStale(current, now, staleMs) && !this.leftBehind(row)) return { held: current };
        this.db
          .prepare(
            `INSERT INTO locks (name, token, pid, host, acquired_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (name) DO UPDATE SET token = excluded.token, pid = excluded.pid, host = excluded.host, acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at`,
          )
          .run(name, token, process.pid, HOST, now, now);
        this.held.add(token);
        return { lock: this.handle(name, token), ...(current ? { tookOverFrom: current } : {}) };
      })
      .immediate();
  }

  /** This process's own row for the lock, whose release it no longer holds (its delete failed: a full disk). */
  private leftBehind(row: { holder: LockHolder; token: string }): boolean {
    return row.holder.pid === process.pid && row.holder.host === HOST && !this.held.has(row.token);
  }

  isStale(h: LockHolder, now: number, staleMs: number): boolean {
    if (h.host === HOST) return !pidAlive(h.pid);
    return now - h.heartbeatAt > staleMs;
  }

  private handle(name: string, token: string): Lock {
    return {
      token,
      heartbeat: () =>
        this.db.prepare('UPDATE locks SET heartbeat_at = ? WHERE name = ? AND token = ?').run(Date.now(), name, token)
          .changes === 1,
      release: () => {
        this.held.delete(token);
        this.db.prepare('DELETE FROM locks WHERE name = ? AND token = ?').run(name, token);
      },
    };
  }
}
