import { headroomLine, historySuites, suiteCell, type CycleHistoryRow } from '../../report/cycle-history.js';
import type { Ui } from '../ui/output.js';

/**
 * The cycles side by side, oldest on the left: a row per suite (its level and production's success there, with the
 * promoted candidate's after an arrow), the outcome and the headroom mix. A plateau shows as a row that stops moving.
 */
export function printHistory(ui: Ui, rows: readonly CycleHistoryRow[]): void {
  if (!rows.some((r) => r.suites.length || r.headroom?.tasks)) return;
  const suites = historySuites(rows);
  ui.print("production's success per suite at its level, cycle by cycle");
  ui.table(
    ['', ...rows.map((r) => `cycle ${r.cycle}`)],
    [
      ...suites.map((s) => [
        s,
        ...rows.map((r) =>
          suiteCell(
            r.suites.find((x) => x.suite === s),
            r.promoted,
          ),
        ),
      ]),
      ['outcome', ...rows.map((r) => r.outcome)],
      ['headroom: never/sometimes/always', ...rows.map((r) => headroomLine(r.headroom, true))],
    ],
  );
}
