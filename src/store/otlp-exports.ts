import type { Reward, Rollout, Span } from '../trace/records.js';
import type { Db } from './database.js';
import { toRollout, whereClause } from './rollouts.js';
import { parsedSpansOf, rewardsOf } from './trace-pages.js';
import type { RolloutFilter } from './types.js';

/** A finished rollout as an exporter reads it: the rollout, its spans in order and its rewards. */
export interface RolloutTrace {
  rollout: Rollout;
  spans: Span[];
  rewards: Reward[];
}

export interface PendingPage {
  traces: RolloutTrace[];
  /** The largest rollout num of the page: the next page starts after it. */
  last: number;
}

/**
 * Which finished rollouts each OTLP endpoint (`target`) has acknowledged. A rollout still running is not pending:
 * it is sent once it finishes, so a long gateway session is exported whole.
 */
export class OtlpExportRepository {
  private readonly spansOf: (ids: string[]) => Map<string, Span[]>;
  private readonly rewardsOf: (ids: string[]) => Map<string, Reward[]>;

  constructor(private readonly db: Db) {
    this.spansOf = parsedSpansOf(db);
    this.rewardsOf = rewardsOf(db);
  }

  /** Finished rollouts matching the filter that `target` has not acknowledged, oldest first, after rollout `after`. */
  pending(target: string, filter: Omit<RolloutFilter, 'offset' | 'limit'>, after: number, limit: number): PendingPage {
    const { where, params } = whereClause(filter);
    const rows = this.db
      .prepare(
        `SELECT * FROM rollouts ${where ? `${where} AND` : 'WHERE'} status <> 'running' AND num > ?
        AND NOT EXISTS (SELECT 1 FROM otlp_exports e WHERE e.target = ? AND e.rollout_id = rollouts.id)
        ORDER BY num LIMIT ?`,
      )
      .all(...params, after, target, limit) as Parameters<typeof toRollout>[0][];
    if (!rows.length) return { traces: [], last: after };
    const ids = rows.map((r) => r.id);
    const spans = this.spansOf(ids);
    const rewards = this.rewardsOf(ids);
    return {
      traces: rows.map((row) => {
        const rollout = toRollout(row);
        return { rollout, spans: spans.get(rollout.id) ?? [], rewards: rewards.get(rollout.id) ?? [] };
      }),
      last: rows[rows.length - 1]!.num,
    };
  }

  /** Records rollouts `target` acknowledged (again: no change). */
  acknowledge(target: string, sent: readonly { rolloutId: string; spans: number }[]): void {
    const insert = this.db.prepare(
      `INSERT INTO otlp_exports (target, rollout_id, spans, exported_at) VALUES (?, ?, ?, ?)
      ON CONFLICT (target, rollout_id) DO NOTHING`,
    );
    const now = Date.now();
    this.db.transaction(() => {
      for (const s of sent) insert.run(target, s.rolloutId, s.spans, now);
    })();
  }

  /** Forgets what `target` acknowledged, so that everything is sent to it again. */
  forget(target: string): number {
    return Number(this.db.prepare('DELETE FROM otlp_exports WHERE target = ?').run(target).changes);
  }

  /** How many rollouts `target` has acknowledged. */
  acknowledged(target: string): number {
    const row = this.db.prepare('SELECT COUNT(*) AS n FROM otlp_exports WHERE target = ?').get(target) as {
      n: number | string;
    };
    return Number(row.n);
  }
}
