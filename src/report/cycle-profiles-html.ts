import type { CycleProfile } from './cycle-profiles.js';
import { esc, table, time } from './tables.js';

const s = (ms: number | null) => (ms === null ? '—' : (ms / 1000).toFixed(1));
const n = (x: number | null, d: number) => (x === null ? '—' : x.toFixed(d));

/** A table per profiled cycle: where each stage's wall time went (the report leaves it out without any). */
export function cycleProfilesSection(cycles: readonly CycleProfile[]): string {
  const head = [
    'stage',
    'wall s',
    'CPU s: self / children',
    'start-up s',
    'generation s',
    'tokens (prompt / completion)',
    'tokens/s',
    'rows per decode step',
    'prefill share',
    'training steps / examples',
    'examples/s',
    'store writes ms',
    'idle s',
  ];
  return cycles
    .map((c) => {
      const rows = c.stages.map(({ stage, profile: p }) => [
        stage,
        s(p.wall_ms),
        `${s(p.cpu_ms.self)} / ${s(p.cpu_ms.children)}`,
        s(p.startup.ms),
        s(p.generation.ms),
        `${p.generation.prompt_tokens} / ${p.generation.completion_tokens}`,
        n(p.generation.tokens_per_s, 1),
        n(p.generation.occupancy, 2),
        p.generation.prefill_share === null ? '—' : `${Math.round(p.generation.prefill_share * 100)} %`,
        `${p.training.steps} / ${p.training.examples}`,
        n(p.training.examples_per_s, 2),
        p.store.ms.toFixed(1),
        s(p.idle_ms),
      ]);
      return `<h3>cycle ${esc(c.cycle)} · ${time(c.startedAt)}</h3>${table(head, rows)}`;
    })
    .join('\n');
}
