import type { Store, StoredTask } from '../store/index.js';
import { toReward } from '../store/rewards.js';
import { EVAL_SOURCE, GATEWAY_SOURCE, toRollout } from '../store/rollouts.js';
import type { Reward, Rollout } from '../trace/records.js';
import { groupBy, inListQuery } from '../store/query.js';

/**
 * The only place the dataset builders read the store with SQL (read-only). Rollouts stream oldest
 * first, a page at a time, so memory holds one page of spans however large the store is.
 */

/** A prompt or coordination span with its payload still as JSON text (parsed on demand by RolloutView). */
export interface TraceSpan {
  seq: number;
  type: 'prompt' | 'coordination';
  name: string;
  agent: string | null;
  payload: string;
}

export interface TraceRecord {
  rollout: Rollout;
  task: StoredTask | null;
  /** Prompt (unless coordinationOnly) and coordination spans in seq order; empty unless the rollout completed. */
  spans: TraceSpan[];
  rewards: Reward[];
}

type RolloutRow = Parameters<typeof toRollout>[0];
type RewardRow = Parameters<typeof toReward>[0];
type SpanTuple = [rolloutId: string, seq: number, type: TraceSpan['type'], name: string, agent: string | null, payload: string];

const SPAN_COLUMNS = 'rollout_id, seq, type, name, agent, payload';

export class TraceReader {
  /** The largest rollout num read so far (the next watermark). */
  watermark: number;
  rolloutsScanned = 0;
  spansRead = 0;
  /** The num of the running rollout reading stopped before, if any. */
  stoppedAt: number | null = null;
  private readonly page;
  private readonly spanAt;
  private readonly spansOf;
  private readonly rewardsOf;
  private readonly tasks = new Map<string, StoredTask | null>();
  private tasksLoaded = false;
  private readonly prompts = new Map<string, string | null>();

  /**
   * `coordinationOnly`: leave prompt spans out of the pages (builders that use almost none of them
   * fetch the few they need with span()). Fetching every prompt span one by one costs more than reading
   * them with the page, so builders that use several per rollout read them all.
   */
  constructor(private readonly store: Store, after: number, private readonly pageSize = 50, coordinationOnly = false) {
    this.watermark = after;
    const db = store.db;
    // Evaluation rollouts never become training data (they would leak the eval split into training).
    // Captured gateway sessions are not read yet: they have no task or reward, and an open session,
    // still running, would hold the watermark back for as long as its agents keep calling.
    this.page = db.prepare(`SELECT * FROM rollouts WHERE num > ? AND source NOT IN ('${EVAL_SOURCE}', '${GATEWAY_SOURCE}')
      ORDER BY num LIMIT ?`);
    this.spanAt = db.prepare(`SELECT ${SPAN_COLUMNS} FROM spans WHERE rollout_id = ? AND seq = ?`).raw(true);
    const types = coordinationOnly ? "type = 'coordination'" : "type IN ('prompt', 'coordination')";
    this.spansOf = inListQuery(db, `SELECT ${SPAN_COLUMNS} FROM spans WHERE rollout_id IN (?) AND ${types} ORDER BY rollout_id, seq`, true);
    this.rewardsOf = inListQuery(db, 'SELECT * FROM rewards WHERE rollout_id IN (?) ORDER BY id', false);
  }

  /**
   * Pages of rollouts with num > the start watermark. Reading stops before the first rollout still
   * running, so the watermark never passes a rollout that has not finished yet.
   */
  *pages(): Generator<TraceRecord[]> {
    while (this.stoppedAt === null) {
      let rows = this.page.all(this.watermark, this.pageSize) as RolloutRow[];
      if (!rows.length) return;
      const running = rows.findIndex((r) => r.status === 'running');
      if (running >= 0) {
        this.stoppedAt = rows[running]!.num;
        rows = rows.slice(0, running);
        if (!rows.length) return;
      }
      this.watermark = rows[rows.length - 1]!.num;
      this.rolloutsScanned += rows.length;
      const done = rows.filter((r) => r.status === 'completed').map((r) => r.id);
      const spans = done.length ? groupBy(this.spansOf(done) as SpanTuple[], (s) => s[0]) : new Map<string, SpanTuple[]>();
      const rewards = done.length ? groupBy(this.rewardsOf(done) as RewardRow[], (r) => r.rollout_id) : new Map<string, RewardRow[]>();
      yield rows.map((row) => {
        const own = spans.get(row.id) ?? [];
        this.spansRead += own.length;
        return { rollout: toRollout(row), task: this.task(row.task_id), spans: own.map(toTraceSpan), rewards: (rewards.get(row.id) ?? []).map(toReward) };
      });
    }
  }

  /** One span by its key, payload included. */
  span(rolloutId: string, seq: number): TraceSpan | undefined {
    const row = this.spanAt.get(rolloutId, seq) as SpanTuple | undefined;
    return row && toTraceSpan(row);
  }

  /** A rollout's task row (all rows are read once, in one query; ones added since are looked up). */
  task(id: string | null): StoredTask | null {
    if (id === null) return null;
    if (!this.tasksLoaded) {
      for (const t of this.store.tasks.list()) this.tasks.set(t.id, t);
      this.tasksLoaded = true;
    }
    if (!this.tasks.has(id)) this.tasks.set(id, this.store.tasks.get(id) ?? null);
    return this.tasks.get(id)!;
  }

  /** The text of a prompt resource (the system prompts recorded in rollout metadata), cached. */
  promptText(resourceId: string): string | null {
    if (!this.prompts.has(resourceId)) this.prompts.set(resourceId, this.store.resources.get(resourceId)?.content ?? null);
    return this.prompts.get(resourceId)!;
  }
}

function toTraceSpan([, seq, type, name, agent, payload]: SpanTuple): TraceSpan {
  return { seq, type, name, agent, payload };
}
