import { fixed } from '../util/fixed.js';
import type { HistoryRow, ReportData } from './data.js';
import type { StoredEvaluation, StoredMetric } from './summary.js';

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text for HTML content or a quoted attribute: stored traces, reasons and names may contain anything. */
export function esc(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

export const fmt = fixed;
const signed = (x: number | null | undefined, d = 3) => {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—';
  const text = x.toFixed(d);
  return Number(text) === 0 ? `+${(0).toFixed(d)}` : `${x > 0 ? '+' : ''}${text}`;
};
const pValue = (p: number | null) => (p === null ? '—' : p < 0.001 ? '&lt;0.001' : p.toFixed(3));
export const time = (ms: number | null | undefined) =>
  ms ? `${new Date(ms).toISOString().replace('T', ' ').slice(0, 16)} UTC` : '—';
const digits = (m: StoredMetric['metric']) => (m === 'tokens' || m === 'wall_ms' ? 0 : 3);
const version = (v: number | null, id: string | null) => (v !== null ? `v${v}` : id ? esc(id) : '—');

/** What a replayed call measures: one answer per side has no consensus, rounds or success. */
const REPLAY_METRICS = new Set<StoredMetric['metric']>(['reward', 'tokens', 'wall_ms']);
const LOWER_IS_BETTER = new Set<StoredMetric['metric']>(['rounds', 'tokens', 'wall_ms']);

type Cell = string | { html: string; cls?: string };

/** A table; plain cells are escaped, {html} cells are already markup. */
export function table(head: string[], rows: Cell[][], cls = ''): string {
  const cell = (c: Cell, tag: 'td' | 'th') =>
    typeof c === 'string'
      ? `<${tag}>${esc(c)}</${tag}>`
      : `<${tag}${c.cls ? ` class="${c.cls}"` : ''}>${c.html}</${tag}>`;
  return (
    `<div class="table-wrap"><table${cls ? ` class="${cls}"` : ''}><thead><tr>${head.map((h) => cell(h, 'th')).join('')}</tr></thead>`
    + `<tbody>${rows.map((r) => `<tr>${r.map((c) => cell(c, 'td')).join('')}</tr>`).join('')}</tbody></table></div>`
  );
}

function metricCells(m: StoredMetric): Cell[] {
  const d = digits(m.metric);
  const ci = m.diff ? `[${signed(m.diff.low, d)}, ${signed(m.diff.high, d)}]` : '—';
  // Green or red only where the interval excludes 0; lower is better for rounds, tokens and wall time.
  const [up, down] = [Boolean(m.diff && m.diff.low > 0), Boolean(m.diff && m.diff.high < 0)];
  const tone = up || down ? (up !== LOWER_IS_BETTER.has(m.metric) ? 'good' : 'bad') : '';
  return [
    { html: String(m.n), cls: 'num' },
    { html: fmt(m.baseline, d), cls: 'num' },
    { html: fmt(m.candidate, d), cls: 'num' },
    { html: signed(m.diff?.mean, d), cls: `num ${tone}` },
    { html: ci, cls: 'num' },
    { html: `${m.counts.wins}/${m.counts.ties}/${m.counts.losses}`, cls: 'num' },
    { html: `${pValue(m.pValue)} (${esc(m.test)})`, cls: 'num' },
  ];
}

/** The selected evaluation: every metric, reward and success per category, and the deploy gates. */
export function evaluationSection(e: StoredEvaluation): string {
  const s = e.summary;
  const level = Math.round((s.comparison.overall.find((m) => m.diff)?.diff?.level ?? 0.95) * 100);
  const head = ['metric', 'pairs', 'baseline', 'candidate', 'difference', `${level} % CI`, 'win/tie/loss', 'p (exact)'];
  const metrics = table(
    head,
    s.comparison.overall
      .filter((m) => !s.replay || REPLAY_METRICS.has(m.metric))
      .map((m) => [
        { html: `${esc(m.metric)}${m.metric === s.metric ? ' <span class="tag">primary</span>' : ''}` },
        ...metricCells(m),
      ]),
  );
  const categories = s.comparison.categories.length
    ? table(
        ['category', ...head],
        s.comparison.categories.flatMap((c) => c.metrics.map((m) => [c.category, m.metric, ...metricCells(m)])),
      )
    : '<p class="empty">No categories.</p>';
  const gates = s.gates.length
    ? `<ul class="gates">${s.gates.map((g) => `<li class="${g.passed ? 'good' : 'bad'}"><span class="mark">${g.passed ? '✓' : '✗'}</span> <b>${esc(g.gate)}</b>: ${esc(g.detail)}</li>`).join('')}</ul>`
    : '<p class="empty">No gates were checked.</p>';
  const side = (label: string, set: StoredEvaluation['summary']['baseline'], id: string) =>
    `<div><b>${label}</b> set ${version(set?.version ?? null, id)}${set?.agents.length ? `: ${set.agents.map((a) => `${esc(a.agent)} (${esc(a.prompt)}, ${esc(a.weights)})`).join('; ')}` : ''}</div>`;
  return (
    `${replaySection(s.replay)}<h3>Metrics</h3>${side('baseline', s.baseline, e.baselineSet)}${side('candidate', s.candidate, e.candidateSet)}${metrics}`
    + `<h3>Per category</h3>${categories}<h3>Deploy gates</h3>${gates}`
  );
}

/** A replay of captured gateway calls: what was replayed, the wins, the judged win rate and the judge's agreement. */
function replaySection(r: StoredEvaluation['summary']['replay']): string {
  if (!r) return '';
  const level = Math.round((r.winRate?.level ?? 0.95) * 100);
  const rows: Cell[][] = [
    [
      { html: String(r.prompts), cls: 'num' },
      { html: String(r.judged), cls: 'num' },
      { html: String(r.referenced), cls: 'num' },
      { html: `${r.wins}/${r.ties}/${r.losses}`, cls: 'num' },
      { html: fmt(r.winRate?.mean), cls: 'num' },
      { html: r.winRate ? `[${fmt(r.winRate.low)}, ${fmt(r.winRate.high)}]` : '—', cls: 'num' },
      { html: fmt(r.agreement), cls: 'num' },
      `${r.judgeFailures} judge, ${r.answerFailures} answer`,
    ],
  ];
  const head = [
    'prompts',
    'judged',
    'referenced',
    'win/tie/loss',
    'win rate',
    `${level} % CI`,
    'judge agreement',
    'failures',
  ];
  return (
    `<h3>Replayed gateway traffic</h3><p>Source gateway: held-out captured calls sent to both sets; calls without a reference`
    + ` judged pairwise in both orders${r.judgeModel ? ` by ${esc(r.judgeModel)}` : ''} (a preference counts when both orders agree).</p>`
    + table(head, rows)
  );
}

/** Changes of production and canary from the audit table, newest first. */
export function historyTable(rows: readonly HistoryRow[]): string {
  if (!rows.length)
    return '<p class="empty">No data yet: production has not been set (the first collect or eval sets it from the config).</p>';
  return table(
    ['time', 'action', 'trigger', 'sets', 'evaluation', 'reason', 'by'],
    rows.map((r) => [
      { html: time(r.createdAt), cls: 'nowrap' },
      { html: `<span class="tag action-${esc(r.action)}">${esc(r.action)}</span>` },
      r.trigger,
      { html: `${version(r.beforeVersion, r.beforeSet)} → ${version(r.afterVersion, r.afterSet)}`, cls: 'nowrap' },
      r.evalRunId ?? '—',
      r.reason ?? '',
      r.actor,
    ]),
  );
}

/** Every evaluation with results, newest first. */
export function evaluationsTable(data: ReportData): string {
  if (!data.evaluations.length)
    return '<p class="empty">No data yet: no evaluation has run (<code>massgen-rl eval</code>).</p>';
  return table(
    ['time', 'evaluation', 'sets', 'tasks × seeds', `${data.metric} baseline → candidate`, 'difference [CI]', 'gates'],
    [...data.evaluations].reverse().map((e) => {
      const s = e.summary;
      const m = s.comparison.overall.find((x) => x.metric === data.metric);
      const selected = e.id === data.selected?.id;
      return [
        { html: time(e.startedAt), cls: 'nowrap' },
        { html: `${esc(e.id)}${selected ? ' <span class="tag">shown</span>' : ''}` },
        {
          html: `${version(s.baseline?.version ?? null, e.baselineSet)} → ${version(s.candidate?.version ?? null, e.candidateSet)}`,
          cls: 'nowrap',
        },
        `${s.tasks ?? '—'} × ${s.seeds.length || '—'}`,
        { html: `${fmt(m?.baseline)} → ${fmt(m?.candidate)}`, cls: 'num' },
        { html: m?.diff ? `${signed(m.diff.mean)} [${signed(m.diff.low)}, ${signed(m.diff.high)}]` : '—', cls: 'num' },
        {
          html: s.passed === null ? esc(e.status) : s.passed ? 'passed' : 'failed',
          cls: s.passed ? 'good' : s.passed === false ? 'bad' : '',
        },
      ];
    }),
  );
}
