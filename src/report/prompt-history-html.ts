import type { PromptChange } from './prompt-history.js';
import { esc, table, time } from './tables.js';

/** The section: one row per promoted prompt version, its diff marked up (removed struck through, added underlined). */
export function promptHistorySection(changes: readonly PromptChange[]): string {
  if (!changes.length)
    return '<p class="empty">No prompt version has been deployed yet (prompt optimization: <code>massgen-rl train prompts</code>).</p>';
  const diff = (c: PromptChange) =>
    c.parts
      .map((p) => (p.added ? `<ins>${esc(p.value)}</ins>` : p.removed ? `<del>${esc(p.value)}</del>` : esc(p.value)))
      .join('');
  return table(
    ['promoted', 'prompt', 'source', 'change against its parent', 'critique'],
    changes.map((c) => [
      { html: `${time(c.promotedAt)}<br>${esc(c.action)} (set v${c.setVersion ?? '—'})`, cls: 'nowrap' },
      `${c.name} v${c.parentVersion} → v${c.version}`,
      c.source,
      { html: `<div class="prompt-diff">${diff(c)}</div>` },
      c.critique ?? '',
    ]),
  );
}
