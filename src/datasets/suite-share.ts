import { groupBy } from '../store/query.js';
import type { RowInfo, StatsCollector } from './stats.js';
import type { DatasetRow, RowSink } from './types.js';

/** A row's suite: its category's first segment (`unit_conversion/length` → `unit_conversion`). */
const suiteOf = (info: RowInfo) => String([...info.categories][0] ?? 'uncategorized').split('/')[0]!;
const taskOf = (row: DatasetRow) => String((row as { meta?: { task_id?: unknown } }).meta?.task_id ?? '');

/**
 * train.dpo.max_suite_share: the night's pairs come mostly from the suite with the most headroom, and a candidate
 * trained on them gains that suite and loses the others. Rows are held until the build ends, then each suite keeps
 * at most this share of the rows kept (at least an even share when there are fewer suites than 1 / share), taken
 * round-robin over its tasks so every task keeps its first pairs; the rest are dropped as over_suite_share.
 */
export function suiteShareSink(share: number, stats: StatsCollector, sink: RowSink): { emit: RowSink; flush(): void } {
  const held: { row: DatasetRow; info: RowInfo; suite: string }[] = [];
  return {
    emit: (row, info) => void held.push({ row, info, suite: suiteOf(info) }),
    flush() {
      const bySuite = groupBy(held, (h) => h.suite);
      const keep = quotas(
        new Map([...bySuite].map(([s, rows]) => [s, rows.length])),
        Math.max(share, 1 / bySuite.size),
      );
      const kept = new Set([...bySuite].flatMap(([suite, rows]) => roundRobin(rows).slice(0, keep.get(suite))));
      for (const h of held) {
        if (kept.has(h)) sink(h.row, h.info);
        else stats.drop('over_suite_share');
      }
      held.length = 0;
    },
  };
}

/** Rows per suite such that none is above `share` of the total kept: shrink the largest until it fits. */
export function quotas(counts: ReadonlyMap<string, number>, share: number): Map<string, number> {
  const keep = new Map(counts);
  for (;;) {
    const total = [...keep.values()].reduce((a, b) => a + b, 0);
    const cap = Math.max(1, Math.floor(share * total + 1e-9));
    const over = [...keep].filter(([, n]) => n > cap);
    if (!over.length) return keep;
    for (const [s] of over) keep.set(s, cap);
  }
}

/** Each task's first row, then each task's second, and so on (tasks in the order first seen). */
function roundRobin<T extends { row: DatasetRow }>(rows: readonly T[]): T[] {
  const lists = [...groupBy([...rows], (r) => taskOf(r.row)).values()];
  const out: T[] = [];
  for (let i = 0; out.length < rows.length; i++) for (const l of lists) if (l[i]) out.push(l[i]!);
  return out;
}
