import type { Algo } from '../config/schema.js';
import { dict } from '../util/dict.js';

/** What one dataset row drew on, for the quality gates and the manifest. */
export interface RowInfo {
  /** Every (rollout, agent) the row came from is clean (see RolloutIndex.clean). */
  clean: boolean;
  /** The task categories of its rollouts. */
  categories: Iterable<string>;
  /** The rollouts it came from. */
  rollouts: Iterable<string>;
}

export interface DatasetStats {
  algo: Algo;
  watermark: { from: number; to: number };
  /** Rollouts read (num > from), by status; only completed ones yield rows. */
  rollouts_scanned: number;
  rollouts_by_status: Record<string, number>;
  /** Rollouts at least one row came from. */
  rollouts_used: number;
  /** Spans read: prompt and coordination spans (coordination only for dpo, which fetches the few prompts it needs). */
  spans: number;
  rows: number;
  clean_rows: number;
  /** clean_rows / rows (0 without rows). */
  clean_share: number;
  /** Rows per task category (a row counts once per category it draws on). */
  categories: Record<string, number>;
  /** Candidates left out, by reason. */
  dropped: Record<string, number>;
  /** Builder-specific counts (groups, pairs, transitions…). */
  counts: Record<string, number>;
}

export class StatsCollector {
  rows = 0;
  cleanRows = 0;
  readonly categories: Record<string, number> = dict();
  readonly dropped: Record<string, number> = {};
  readonly counts: Record<string, number> = {};
  readonly byStatus: Record<string, number> = {};
  private readonly used = new Set<string>();

  row(info: RowInfo): void {
    this.rows++;
    if (info.clean) this.cleanRows++;
    for (const c of new Set(info.categories)) this.categories[c] = (this.categories[c] ?? 0) + 1;
    for (const r of info.rollouts) this.used.add(r);
  }

  drop(reason: string, n = 1): void {
    if (n > 0) this.dropped[reason] = (this.dropped[reason] ?? 0) + n;
  }

  count(key: string, n = 1): void {
    this.counts[key] = (this.counts[key] ?? 0) + n;
  }

  status(status: string): void {
    this.byStatus[status] = (this.byStatus[status] ?? 0) + 1;
  }

  snapshot(algo: Algo, watermark: { from: number; to: number }, spans: number): DatasetStats {
    const sorted = <T>(o: Record<string, T>) =>
      Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    return {
      algo,
      watermark,
      rollouts_scanned: Object.values(this.byStatus).reduce((a, b) => a + b, 0),
      rollouts_by_status: sorted(this.byStatus),
      rollouts_used: this.used.size,
      spans,
      rows: this.rows,
      clean_rows: this.cleanRows,
      clean_share: this.rows ? this.cleanRows / this.rows : 0,
      categories: sorted(this.categories),
      dropped: sorted(this.dropped),
      counts: sorted(this.counts),
    };
  }
}
