import { LOOP_STEPS } from '../../config/schema.js';
import type { CycleState } from '../../scheduler/cycles.js';
import type { StageProfile } from '../../util/stage-profile.js';
import type { Ui } from '../ui/output.js';

const secs = (ms: number | null | undefined) => (typeof ms === 'number' ? (ms / 1000).toFixed(1) : '—');
const fixed = (x: number | null | undefined, digits: number) => (typeof x === 'number' ? x.toFixed(digits) : '—');

export const PROFILE_HEAD = [
  'stage',
  'wall s',
  'cpu s (self+children)',
  'start-up s',
  'gen tok/s',
  'rows/step',
  'prefill',
  'train ex/s',
  'store ms',
  'idle s',
];

/** One row a profiled stage: the compact view of each stage's profile (`loop status --json` has it whole). */
export function profileRows(stages: CycleState['stages']): (string | number)[][] {
  return LOOP_STEPS.flatMap((stage) => {
    const p: StageProfile | undefined = stages[stage]?.profile;
    if (!p) return [];
    return [
      [
        stage,
        secs(p.wall_ms),
        `${secs(p.cpu_ms.self)}+${secs(p.cpu_ms.children)}`,
        p.startup.ms ? secs(p.startup.ms) : '—',
        p.generation.completion_tokens ? fixed(p.generation.tokens_per_s, 1) : '—',
        fixed(p.generation.occupancy, 1),
        p.generation.prefill_share === null ? '—' : `${Math.round(p.generation.prefill_share * 100)}%`,
        p.training.steps ? fixed(p.training.examples_per_s, 2) : '—',
        p.store.ms.toFixed(0),
        secs(p.idle_ms),
      ],
    ];
  });
}

/** The table of where a cycle's time went, when its stages were profiled. */
export function printProfile(ui: Ui, cycle: number, stages: CycleState['stages']): void {
  const rows = profileRows(stages);
  if (!rows.length) return;
  ui.print(`cycle ${cycle}: where the time went`);
  ui.table(PROFILE_HEAD, rows);
}
