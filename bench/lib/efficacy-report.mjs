import fs from 'node:fs';

const TICK = 100; // USER_HZ: /proc times are in clock ticks of 1/100 s on Linux

/** CPU-seconds of this process, its reaped children and every live descendant (trainers, model servers). */
export function cpuSeconds() {
  const stats = new Map();
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      // Fields after the command name (which may hold spaces): state ppid … utime stime cutime cstime.
      const raw = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = raw.slice(raw.lastIndexOf(')') + 2).split(' ');
      stats.set(Number(pid), {
        ppid: Number(f[1]),
        ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]),
      });
    } catch {
      // gone meanwhile
    }
  }
  const ours = new Set([process.pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, s] of stats)
      if (!ours.has(pid) && ours.has(s.ppid)) {
        ours.add(pid);
        grew = true;
      }
  }
  let ticks = 0;
  for (const pid of ours) ticks += stats.get(pid)?.ticks ?? 0;
  return ticks / TICK;
}

/** A collect's record in a benchmark's results: its counts, reward, tokens, and wall and CPU seconds since t0, cpu0. */
export function collectRecord(col, t0, cpu0) {
  return {
    tasks: col.tasks,
    completed: col.completed,
    failed: col.failed,
    meanReward: col.meanReward,
    tokens: col.tokens,
    wallSeconds: Math.round((Date.now() - t0) / 100) / 10,
    cpuSeconds: Math.round((cpuSeconds() - cpu0) * 10) / 10,
  };
}

const esc = (v) =>
  String(v ?? '—').replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
const pct = (x) => (Number.isFinite(x) ? `${(x * 100).toFixed(1)} %` : '—');
const pts = (d) =>
  d ? `${(d.mean * 100).toFixed(1)} [${(d.low * 100).toFixed(1)}, ${(d.high * 100).toFixed(1)}]` : '—';

function table(head, rows) {
  return `<table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('')}</tbody></table>`;
}

function categoryRows(vs) {
  return (vs?.categories ?? []).map((c) => [
    c.category,
    c.pairs,
    pct(c.success.base),
    pct(c.success.production),
    pts(c.success.diff),
  ]);
}

const TRANSFER_HEAD = ['pairs', 'base', 'candidate', 'Δ success, points [95 % CI]', 'won / lost', 'p (McNemar)'];
const transferCells = (pairs, s) => [
  pairs,
  pct(s.base),
  pct(s.candidate),
  pts(s.diff),
  `${s.wins} / ${s.losses}`,
  s.pValue ?? '—',
];

/** Each candidate against the base on the held-out transfer set, overall and per skill area. */
function transferSection(r) {
  if (!r.transfer) return '';
  const rows = r.ablation.filter((a) => a.transfer);
  const overall = rows.map((a) =>
    a.transfer.error
      ? [a.recipe, 'error', a.transfer.error]
      : [a.recipe, ...transferCells(a.transfer.pairs, a.transfer.success)],
  );
  const areas = rows
    .filter((a) => !a.transfer.error)
    .map(
      (a) =>
        `<h3>${esc(a.recipe)} candidate on the transfer set by skill area</h3>${table(
          ['skill area', ...TRANSFER_HEAD],
          a.transfer.areas.map((x) => [x.area, ...transferCells(x.pairs, x)]),
        )}`,
    )
    .join('');
  return `<h2>Transfer: each candidate against the base on ${esc(r.transfer)} (hand-written, never trained on; every task)</h2>
${table(['recipe', ...TRANSFER_HEAD], overall)}
${areas}`;
}

/** The benchmark's HTML page: per-cycle results against the base, per category, the ablation and the transfer set. */
export function efficacyHtml(r) {
  // Production still the base set: no change to measure.
  const same = (c) => c.production === r.base?.set;
  const cycles = r.perCycle.map((c) => [
    c.cycle,
    c.promoted ? 'yes' : 'no',
    (c.deploy?.failedGates ?? []).join('; ') || '—',
    `set v${c.production}${same(c) ? ' (the base)' : ''}`,
    pct(c.vsBase?.success.base),
    pct(c.vsBase?.success.production),
    same(c) ? '0' : pts(c.vsBase?.success.diff),
    same(c) ? '0' : pts(c.vsBase?.reward.diff),
    c.levels
      ? Object.entries(c.levels)
          .map(([suite, level]) => `${suite} ${level}`)
          .join(', ')
      : '—',
    c.vsBase ? `${c.vsBase.tokensPerTask.base} → ${c.vsBase.tokensPerTask.production}` : '—',
    c.examplesTrained,
    c.collectTokens,
    c.wallSeconds,
    c.cpuSeconds,
  ]);
  const ablation = r.ablation.map((a) =>
    a.error
      ? [a.recipe, 'error', a.error, '', '', '', '']
      : [
          a.recipe,
          a.gatesPassed === null ? '—' : a.gatesPassed ? 'yes' : 'no',
          pct(a.candidateVsProduction?.success.base),
          pct(a.candidateVsProduction?.success.production),
          pts(a.candidateVsProduction?.success.diff),
          a.examplesTrained,
          a.wallSeconds,
        ],
  );
  const perCategory = r.perCycle
    .filter((c) => c.vsBase)
    .map(
      (c) =>
        `<h3>Cycle ${c.cycle} by category</h3>${table(['category', 'pairs', 'base', 'production', 'Δ success, points [95 % CI]'], categoryRows(c.vsBase))}`,
    )
    .join('');
  const candidates = r.ablation
    .filter((a) => a.candidateVsProduction)
    .map(
      (a) =>
        `<h3>${esc(a.recipe)} candidate by category</h3>${table(['category', 'pairs', 'base', 'candidate', 'Δ success, points [95 % CI]'], categoryRows(a.candidateVsProduction))}`,
    )
    .join('');
  return `<!doctype html><meta charset="utf-8"><title>massgen-rl efficacy</title>
<style>body{font:14px system-ui;margin:2em}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f4f4f4}</style>
<h1>Efficacy: ${esc(r.cycles)} cycle(s) of ${esc(r.main)} on ${esc(r.suites.join(', '))}</h1>
<p>Base set v${esc(r.base?.set)}; first collect: ${esc(r.base?.collect?.completed)} rollouts, ${esc(r.base?.collect?.tokens)} tokens, ${esc(r.base?.collect?.wallSeconds)} s.</p>
<h2>Per cycle: production against the base on the eval split</h2>
${table(['cycle', 'promoted', 'failed gates', 'production', 'base success', 'production success', 'Δ success, points [95 % CI]', 'Δ reward [95 % CI]', 'suite levels', 'tokens per task (base → production)', 'examples trained', 'collect tokens', 'wall s', 'CPU s'], cycles)}
${perCategory}
<h2>Ablation: one cycle per recipe on the same traces, the candidate against the base</h2>
${table(['recipe', 'deploy gates pass', 'base success', 'candidate success', 'Δ success, points [95 % CI]', 'examples trained', 'wall s'], ablation)}
${candidates}
${transferSection(r)}
`;
}
