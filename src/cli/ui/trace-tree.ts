import type { Reward, Rollout, Span } from '../../trace/records.js';
import type { Colors } from './colors.js';
import { formatDuration, formatTime, taskOf, truncate } from './format.js';

/** A rollout as an indented tree: spans nest under their parent span, rewards listed last. */
export function renderTraceTree(d: { rollout: Rollout; spans: Span[]; rewards: Reward[] }, c: Colors): string {
  const r = d.rollout;
  const lines = [
    `${c.bold(r.id)}  ${r.status}  task ${taskOf(r, 80)}  reward ${r.totalReward?.toFixed(3) ?? '—'}`,
    c.dim(
      `started ${formatTime(r.startedAt)}, ${formatDuration(r.wallMs)}, ${r.tokens} tokens, ${r.toolCalls} tool calls, ${r.messages} messages`,
    ),
  ];
  if (r.error) lines.push(c.red(`error: ${r.error}`));
  if (r.finalAnswer) lines.push(`final answer${r.winner ? ` (${r.winner})` : ''}: ${truncate(r.finalAnswer, 100)}`);
  const children = new Map<number | null, Span[]>();
  for (const s of d.spans) {
    const parent = s.parentSeq !== null && d.spans.some((p) => p.seq === s.parentSeq) ? s.parentSeq : null;
    children.set(parent, [...(children.get(parent) ?? []), s]);
  }
  const walk = (parent: number | null, prefix: string) => {
    const list = children.get(parent) ?? [];
    list.forEach((s, i) => {
      const last = i === list.length - 1;
      const head = `${c.dim(`#${s.seq}`)} ${c.cyan(s.type)} ${s.name}${s.agent ? ` [${s.agent}]` : ''} ${c.dim(formatDuration(s.durationMs))}`;
      lines.push(`${prefix}${last ? '└─ ' : '├─ '}${head}  ${c.dim(truncate(summarize(s.payload), 80))}`);
      walk(s.seq, `${prefix}${last ? '   ' : '│  '}`);
    });
  };
  walk(null, '');
  if (d.rewards.length) {
    lines.push(c.bold('rewards'));
    for (const w of d.rewards) {
      lines.push(
        `  ${w.family}/${w.channel}${w.agent ? ` [${w.agent}]` : ''}${w.targetSeq !== null ? ` @#${w.targetSeq}` : ''}: ${w.value.toFixed(3)}${w.reason ? c.dim(`  ${truncate(w.reason, 60)}`) : ''}`,
      );
    }
  }
  return lines.join('\n');
}

function summarize(payload: unknown): string {
  if (payload === null || typeof payload !== 'object') return String(payload ?? '');
  const p = payload as Record<string, unknown>;
  for (const key of ['content', 'text', 'answer', 'reason', 'result', 'response']) {
    if (typeof p[key] === 'string') return p[key];
  }
  return JSON.stringify(payload);
}
