import type { Db } from './database.js';
import { groupBy, inListQuery } from './query.js';
import { toReward } from './rewards.js';
import { EVAL_SOURCE, GATEWAY_SOURCE, toRollout } from './rollouts.js';
import type { Reward, Rollout } from './types.js';

/** A prompt or coordination span with its payload still as JSON text (parsed on demand by RolloutIndex). */
export interface TraceSpan {
  seq: number;
  type: 'prompt' | 'coordination';
  name: string;
  agent: string | null;
  payload: string;
}

type RolloutRow = Parameters<typeof toRollout>[0];
type RewardRow = Parameters<typeof toReward>[0];
type SpanTuple = [
  rolloutId: string,
  seq: number,
  type: TraceSpan['type'],
  name: string,
  agent: string | null,
  payload: string,
];

const SPAN_COLUMNS = 'rollout_id, seq, type, name, agent, payload';

/**
 * What the dataset builders read (read-only), a page of rollouts at a time with their spans and rewards.
 * Evaluation rollouts never become training data (they would leak the eval split into training).
 * Captured gateway sessions are not read yet: they have no task or reward, and an open session, still
 * running, would hold the watermark back for as long as its agents keep calling.
 */
export class TrainingTraceRepository {
  private readonly page;
  private readonly spanAt;
  private readonly spansOf;
  private readonly coordinationOf;
  private readonly rewardsOf;

  constructor(db: Db) {
    this.page = db.prepare(`SELECT * FROM rollouts
      WHERE num > ? AND source NOT IN ('${EVAL_SOURCE}', '${GATEWAY_SOURCE}') ORDER BY num LIMIT ?`);
    this.spanAt = db.prepare(`SELECT ${SPAN_COLUMNS} FROM spans WHERE rollout_id = ? AND seq = ?`).raw(true);
    const spans = (types: string) =>
      inListQuery(
        db,
        `SELECT ${SPAN_COLUMNS} FROM spans WHERE rollout_id IN (?) AND ${types} ORDER BY rollout_id, seq`,
        true,
      );
    this.spansOf = spans("type IN ('prompt', 'coordination')");
    this.coordinationOf = spans("type = 'coordination'");
    this.rewardsOf = inListQuery(db, 'SELECT * FROM rewards WHERE rollout_id IN (?) ORDER BY id', false);
  }

  /** Up to `limit` training-source rollouts numbered after `afterNum`, oldest first, running ones included. */
  rollouts(afterNum: number, limit: number): Rollout[] {
    return (this.page.all(afterNum, limit) as RolloutRow[]).map(toRollout);
  }

  /** Each rollout's prompt and coordination spans (coordination ones only with `coordinationOnly`), in seq order. */
  spans(rolloutIds: string[], coordinationOnly = false): Map<string, TraceSpan[]> {
    const rows = (coordinationOnly ? this.coordinationOf : this.spansOf)(rolloutIds) as SpanTuple[];
    const byRollout = new Map<string, TraceSpan[]>();
    for (const [id, list] of groupBy(rows, (s) => s[0])) byRollout.set(id, list.map(toTraceSpan));
    return byRollout;
  }

  /** One span by its key, payload included. */
  span(rolloutId: string, seq: number): TraceSpan | undefined {
    const row = this.spanAt.get(rolloutId, seq) as SpanTuple | undefined;
    return row && toTraceSpan(row);
  }

  /** The rewards of each rollout, in the order they were written. */
  rewards(rolloutIds: string[]): Map<string, Reward[]> {
    const rows = this.rewardsOf(rolloutIds) as RewardRow[];
    const byRollout = new Map<string, Reward[]>();
    for (const [id, list] of groupBy(rows, (r) => r.rollout_id)) byRollout.set(id, list.map(toReward));
    return byRollout;
  }
}

function toTraceSpan([, seq, type, name, agent, payload]: SpanTuple): TraceSpan {
  return { seq, type, name, agent, payload };
}
