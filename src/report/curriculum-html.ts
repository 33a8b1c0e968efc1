import type { LevelChange, SuiteCurriculum } from '../store/index.js';
import { esc, table, time } from './tables.js';

const rate = (successes: number, trials: number) =>
  trials ? `${((successes / trials) * 100).toFixed(1)} % (${successes}/${trials})` : '— (0/0)';

/** The section: each suite's level with production's success there, per category, and every level change. */
export function curriculumSection(suites: readonly SuiteCurriculum[], changes: readonly LevelChange[]): string {
  const levels = table(
    ['suite', 'level', "production's success at it", 'per category', 'at this level since'],
    suites.map((s) => [
      s.suite,
      String(s.level),
      rate(s.successes, s.trials),
      { html: s.categories.map((c) => `${esc(c.category)}: ${rate(c.successes, c.trials)}`).join('<br>') || '—' },
      s.lastChange ? time(s.lastChange.createdAt) : 'start_level',
    ]),
  );
  const history = changes.length
    ? table(
        ['when', 'suite', 'level', 'why'],
        changes.map((c) => [time(c.createdAt), c.suite, `${c.fromLevel ?? '—'} → ${c.level}`, c.reason]),
      )
    : '<p class="empty">No suite has moved up yet.</p>';
  return `${levels}<h3>Level changes</h3>${history}`;
}
