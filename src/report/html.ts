import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { CLIENT_SCRIPT } from './client.js';
import { curriculumSection } from './curriculum-html.js';
import { cycleHistorySection } from './cycle-history-html.js';
import { cycleProfilesSection } from './cycle-profiles-html.js';
import type { ReportData } from './data.js';
import { promptHistorySection } from './prompt-history-html.js';
import { STYLE } from './style.js';
import { esc, evaluationSection, evaluationsTable, fmt, historyTable, time } from './tables.js';

let chartJs: string | undefined;

/** Chart.js's UMD build, read from the installed package (inlined: the page loads nothing). */
export function chartJsSource(): string {
  if (chartJs === undefined) {
    const main = createRequire(import.meta.url).resolve('chart.js');
    chartJs = fs.readFileSync(path.join(path.dirname(main), 'chart.umd.min.js'), 'utf8');
  }
  return chartJs;
}

/** JSON inside a <script> element: every `<` escaped, so no text can close the element or open a comment. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

const inlineScript = (js: string) => `<script>${js.replace(/<\/script/gi, '<\\/script')}</script>`;

interface Figure {
  chart: 'cycles' | 'suites' | 'categories' | 'cost' | 'training';
  title: string;
  caption: string;
  hasData: boolean;
  empty: string;
}

function figure(f: Figure): string {
  const body = f.hasData
    ? `<div class="canvas-box"><canvas id="chart-${f.chart}" data-chart="${f.chart}" role="img" aria-label="${esc(f.title)}"></canvas></div>`
    : `<div class="empty" data-empty="${f.chart}">No data yet: ${f.empty}</div>`;
  return `<figure class="chart"><h2>${esc(f.title)}</h2><p class="caption">${f.caption}</p>${body}</figure>`;
}

/** The report as one self-contained HTML page: styles, Chart.js, the page script and the data inlined. */
export function renderReport(data: ReportData, chart = chartJsSource()): string {
  const sel = data.selected;
  const metric = data.metric === 'success' ? 'success rate' : `mean ${data.metric}`;
  // The per-suite chart once the loop has run: a project without loop cycles has nothing it could show.
  const figures = (
    [
      {
        chart: 'cycles',
        title: data.cycles.source === 'loop' ? 'Reward per loop cycle' : 'Reward per run',
        caption:
          data.cycles.source === 'loop'
            ? `Each cycle's collect (production serving) and its evaluation: baseline (production) and candidate ${esc(metric)}.`
            : `No loop cycles yet: evaluations (baseline vs candidate ${esc(metric)}) and collects (mean reward of production) in time order.`,
        hasData: data.cycles.points.length > 0,
        empty: 'run <code>massgen-rl collect</code>, <code>eval</code> or <code>loop</code>.',
      },
      {
        chart: 'suites',
        title: 'Success per suite, cycle by cycle',
        caption:
          "Production's success rate on each suite at its level (the curriculum's, else the highest evaluated) in each loop "
          + "cycle's evaluation, after the cycle: the candidate's where it was promoted. A level change restarts a line's "
          + 'climb; the table below has the outcomes and the headroom mix.',
        hasData: data.cycleHistory.some((r) => r.suites.some((x) => x.after !== null)),
        empty: 'no loop cycle has an evaluation on the built-in suites (<code>massgen-rl loop --once</code>).',
      },
      {
        chart: 'categories',
        title: 'Per category',
        hasData: Boolean(sel?.categories.length),
        caption: sel
          ? `${esc(metric)} of evaluation ${esc(sel.id)} per task category; whiskers: the baseline mean plus the paired-bootstrap interval of the difference.`
          : 'The shown evaluation, per task category.',
        empty: sel
          ? 'the evaluation has no per-category values.'
          : 'no evaluation has run (<code>massgen-rl eval</code>).',
      },
      {
        chart: 'cost',
        title: 'Cost per task',
        hasData: data.cost.length > 0,
        caption: 'Tokens (bars) and wall time (lines) per task × seed, baseline vs candidate, for each evaluation.',
        empty: 'no evaluation has run (<code>massgen-rl eval</code>).',
      },
      {
        chart: 'training',
        title: 'Training',
        hasData: data.training.length > 0,
        caption: `Loss and reward per step${data.training.length ? ` of the last ${data.training.length} training run(s)` : ''}, from the stored step metrics.`,
        empty: 'no training run has recorded step metrics (<code>massgen-rl train</code>).',
      },
    ] satisfies Figure[]
  ).filter((f) => f.chart !== 'suites' || data.cycleHistory.length > 0);
  const primary = sel?.summary.comparison.overall.find((m) => m.metric === data.metric);
  const cards = [
    card(
      'production',
      data.production ? `set v${data.production.version}` : '—',
      data.production ? esc(data.production.id) : 'not set yet',
    ),
    card(
      'evaluation',
      sel ? esc(sel.id) : '—',
      sel
        ? `candidate v${sel.summary.candidate?.version ?? '?'} vs baseline v${sel.summary.baseline?.version ?? '?'} · ${time(sel.startedAt)}`
        : 'none yet',
    ),
    card(
      `${esc(metric)} difference`,
      primary?.diff ? `${primary.diff.mean >= 0 ? '+' : ''}${fmt(primary.diff.mean)}` : '—',
      primary?.diff
        ? `${Math.round(primary.diff.level * 100)} % CI [${fmt(primary.diff.low)}, ${fmt(primary.diff.high)}] · ${fmt(primary.baseline)} → ${fmt(primary.candidate)}`
        : 'no comparison yet',
    ),
    card(
      'deploy gates',
      sel ? (sel.summary.passed ? 'pass' : 'do not pass') : '—',
      sel
        ? `${sel.summary.gates.filter((g) => g.passed).length}/${sel.summary.gates.length} passed${sel.status === 'cancelled' ? ' · interrupted: partial' : ''}`
        : '',
      sel ? (sel.summary.passed ? 'good' : 'bad') : '',
    ),
  ];
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<link rel="icon" href="data:,">
<title>${esc(data.title)} · massgen-rl report</title>
<style>${STYLE}</style>
</head>
<body>
<header><h1>${esc(data.title)} <span>massgen-rl report</span></h1><p class="meta">built ${time(data.generatedAt)} from the store</p></header>
<main>
<section class="cards">${cards.join('')}</section>
<section class="charts">${figures.map(figure).join('\n')}</section>
<section><h2>Evaluation ${sel ? esc(sel.id) : ''}</h2>${sel ? evaluationSection(sel) : '<p class="empty">No data yet: no evaluation has run (<code>massgen-rl eval</code>).</p>'}</section>
${data.cycleHistory.length ? `<section><h2>Cycle by cycle</h2>${cycleHistorySection(data.cycleHistory)}</section>` : ''}
<section><h2>Production history</h2>${historyTable(data.history)}</section>
<section><h2>Prompt history</h2>${promptHistorySection(data.prompts)}</section>
${data.curriculum ? `<section><h2>Curriculum</h2>${curriculumSection(data.curriculum.suites, data.curriculum.changes)}</section>` : ''}
<section><h2>Evaluations</h2>${evaluationsTable(data)}</section>
${data.profiles.length ? `<section><h2>Where each loop cycle's time went</h2>${cycleProfilesSection(data.profiles)}</section>` : ''}
</main>
<script type="application/json" id="report-data">${scriptJson(data)}</script>
${inlineScript(chart)}
${inlineScript(CLIENT_SCRIPT)}
</body>
</html>
`;
}

function card(label: string, value: string, detail: string, tone = ''): string {
  return `<div class="card ${tone}"><div class="label">${label}</div><div class="value">${value}</div><div class="detail">${detail}</div></div>`;
}
