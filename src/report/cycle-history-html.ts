import { headroomLine, historySuites, suiteCell, type CycleHistoryRow } from './cycle-history.js';
import { esc, table, time } from './tables.js';

/** The table under the per-suite chart: a row per cycle, a column per suite, the outcome and the headroom mix. */
export function cycleHistorySection(rows: readonly CycleHistoryRow[]): string {
  const suites = historySuites(rows);
  return table(
    ['cycle', 'started', 'production', ...suites, 'outcome', 'headroom (tasks by answers right)'],
    [...rows].reverse().map((r) => [
      String(r.cycle),
      time(r.startedAt),
      r.production ? `set v${r.production.version ?? '?'}` : '—',
      ...suites.map((s) =>
        suiteCell(
          r.suites.find((x) => x.suite === s),
          r.promoted,
        ),
      ),
      { html: r.promoted ? `<b>${esc(r.outcome)}</b>` : esc(r.outcome) },
      headroomLine(r.headroom),
    ]),
  );
}
