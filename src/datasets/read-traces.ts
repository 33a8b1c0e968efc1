import type { Store, StoredTask, TraceSpan } from '../store/index.js';
import type { Reward, Rollout } from '../trace/records.js';

export type { TraceSpan } from '../store/index.js';

/**
 * How the dataset builders read the store (read-only, through store.trainingTraces). Rollouts stream
 * oldest first, a page at a time, so memory holds one page of spans however large the store is.
 */

export interface TraceRecord {
  rollout: Rollout;
  task: StoredTask | null;
  /** Prompt (unless coordinationOnly) and coordination spans in seq order; empty unless the rollout completed. */
  spans: TraceSpan[];
  rewards: Reward[];
}

export class TraceReader {
  /** The largest rollout num read so far (the next watermark). */
  watermark: number;
  rolloutsScanned = 0;
  spansRead = 0;
  /** The num of the running rollout reading stopped before, if any. */
  stoppedAt: number | null = null;
  private readonly tasks = new Map<string, StoredTask | null>();
  private tasksLoaded = false;
  private readonly prompts = new Map<string, string | null>();

  /**
   * `coordinationOnly`: leave prompt spans out of the pages (builders that use almost none of them
   * fetch the few they need with span()). Fetching every prompt span one by one costs more than reading
   * them with the page, so builders that use several per rollout read them all.
   */
  constructor(
    private readonly store: Store,
    after: number,
    private readonly pageSize = 50,
    private readonly coordinationOnly = false,
  ) {
    this.watermark = after;
  }

  /**
   * Pages of rollouts with num > the start watermark. Reading stops before the first rollout still
   * running, so the watermark never passes a rollout that has not finished yet.
   */
  *pages(): Generator<TraceRecord[]> {
    while (this.stoppedAt === null) {
      let rows = this.store.trainingTraces.rollouts(this.watermark, this.pageSize);
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
      const traces = this.store.trainingTraces;
      const spans = done.length ? traces.spans(done, this.coordinationOnly) : new Map<string, TraceSpan[]>();
      const rewards = done.length ? traces.rewards(done) : new Map<string, Reward[]>();
      yield rows.map((rollout) => {
        const own = spans.get(rollout.id) ?? [];
        this.spansRead += own.length;
        return { rollout, task: this.task(rollout.taskId), spans: own, rewards: rewards.get(rollout.id) ?? [] };
      });
    }
  }

  /** One span by its key, payload included. */
  span(rolloutId: string, seq: number): TraceSpan | undefined {
    return this.store.trainingTraces.span(rolloutId, seq);
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
    if (!this.prompts.has(resourceId))
      this.prompts.set(resourceId, this.store.resources.get(resourceId)?.content ?? null);
    return this.prompts.get(resourceId)!;
  }
}
