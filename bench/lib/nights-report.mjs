// The nights benchmark's figures: a training run's end-of-run diagnostics, the per-cycle table and the targets.
import { roundTo } from './stats.mjs';

// DPO's implicit rewards: chosen below 0 at the end of a run is the likelihood displacement seen from cycle 3 on.
const WATCHED = ['loss', 'rewards/chosen', 'rewards/rejected', 'rewards/margins', 'logps/chosen', 'entropy'];
const LAST_STEPS = 10;

/** The mean of each watched metric over a run's last LAST_STEPS logged steps (those it logged at all). */
export function trainDiagnostics(steps) {
  const tail = steps.slice(-LAST_STEPS);
  const out = { steps: steps.length };
  for (const key of WATCHED) {
    // The trainer's own log (TRL's names) is under `metrics`; the protocol's summary fields beside it.
    const values = tail
      .map((s) => s.metrics.metrics?.[key] ?? s.metrics[key])
      .filter((v) => typeof v === 'number' && Number.isFinite(v));
    if (values.length) out[key] = roundTo(values.reduce((a, b) => a + b, 0) / values.length, 4);
  }
  return out;
}

/** Success on level-0 tasks (pooled over the suites, weighted by pairs) for the base and production sides. */
export function levelZero(vs) {
  const rows = (vs?.levels ?? []).filter((l) => l.level === 0 && l.pairs > 0);
  if (!rows.length) return null;
  const n = rows.reduce((a, l) => a + l.pairs, 0);
  const mean = (side) => roundTo(rows.reduce((a, l) => a + l.success[side] * l.pairs, 0) / n, 4);
  return { pairs: n, base: mean('base'), production: mean('production') };
}

/** Production's level-0 success after a cycle: against the base when it changed, else its side of the cycle's eval. */
export function productionLevelZero(c) {
  if (c.vsBase) return levelZero(c.vsBase)?.production ?? null;
  return levelZero(c.candidateVsProduction)?.base ?? null;
}

/** A DPO dataset's pairs by kind (`correctness_pairs`, `rationalized_pairs`, …), else its rows. */
function trainedOn(c) {
  if (c.examplesTrained === null) return '—';
  const pairs = Object.entries(c.dataset?.counts ?? {}).filter(([k]) => k.endsWith('_pairs'));
  const what = pairs.length ? pairs.map(([k, n]) => `${n} ${k.replace(/_pairs$/, '')}`).join(' + ') : c.examplesTrained;
  return `${what} (${c.trainSteps ?? '—'})`;
}

/** The suites a promoted candidate made worse than production at their level (CI wholly below 0). */
export function regressedSuites(c) {
  if (!c.promoted) return [];
  return (c.candidateVsProduction?.levels ?? []).filter((l) => l.success.diff?.high < 0).map((l) => l.suite);
}

const signed = (x) => `${x >= 0 ? '+' : '−'}${Math.abs(x * 100).toFixed(1)}`;
const points = (d) => (d ? `${signed(d.mean)} (${signed(d.low)} … ${signed(d.high)})` : '—');
const pct = (x) => (Number.isFinite(x) ? `${(x * 100).toFixed(1)} %` : '—');
const minutes = (s) => (Number.isFinite(s) ? (s / 60).toFixed(1) : '—');

function levelsCell(levels, suites) {
  return levels ? suites.map((s) => levels[s] ?? '—').join(' / ') : '—';
}

/** The ten-night table (markdown), one row per cycle. */
export function nightsLines(r) {
  const head = [
    'cycle',
    `levels (${r.suites.map((s) => s.split('_')[0]).join(' / ')})`,
    'headroom never / sometimes / always',
    'trained on (steps)',
    'DPO rewards/chosen, last steps',
    'candidate against production, success Δ points (95 % CI)',
    'outcome',
    'production against base, success Δ (95 % CI)',
    'level 0: base → production',
    'transfer: production against base, Δ (95 % CI)',
    'wall (CPU) min',
  ];
  const rows = r.perCycle.map((c) => {
    const h = c.headroom;
    const l0 = levelZero(c.vsBase);
    const own = l0 ? null : productionLevelZero(c);
    const t = c.transfer?.success;
    return [
      c.cycle,
      levelsCell(c.levels, r.suites),
      h?.tasks ? `${h.never} / ${h.sometimes} / ${h.always}` : '—',
      trainedOn(c),
      c.training?.['rewards/chosen'] ?? '—',
      points(c.candidateVsProduction?.success.diff)
        + (c.candidateVsProduction?.seeds > 1 ? `, ${c.candidateVsProduction.seeds} seeds` : ''),
      c.outcome + (regressedSuites(c).length ? ` (worse on ${regressedSuites(c).join(', ')})` : ''),
      points(c.vsBase?.success.diff),
      l0 ? `${pct(l0.base)} → ${pct(l0.production)}` : own === null ? '—' : `${pct(own)} (production is the base)`,
      t ? `${points(t.diff)} (v${c.transfer.production})` : '—',
      `${minutes(c.wallSeconds)} (${minutes(c.cpuSeconds)})`,
    ];
  });
  return [head, head.map(() => '---'), ...rows].map((cells) => `| ${cells.join(' | ')} |`);
}

function target(label, value, unit, ok, want) {
  return { label, value, unit, target: want, ok };
}

/** The targets, each with whether this run met it. */
export function nightsHeadlines(r) {
  const cycles = r.perCycle;
  const last = cycles.at(-1);
  if (!last) return [];
  const promoted = cycles.filter((c) => c.promoted).length;
  const l0 = productionLevelZero(last);
  const levels = Object.values(last.levels ?? {});
  const t = last.transfer?.success?.diff;
  const regressed = cycles.filter((c) => regressedSuites(c).length).length;
  return [
    target(`cycles promoted of ${cycles.length}`, promoted, 'cycles', promoted >= 6, '>= 6'),
    target('production on level-0 eval tasks', roundTo((l0 ?? NaN) * 100, 1), '%', l0 >= 0.8, '>= 80'),
    target('lowest suite level', levels.length ? Math.min(...levels) : NaN, '', Math.min(...levels) >= 1, '>= 1'),
    target('highest suite level', levels.length ? Math.max(...levels) : NaN, '', Math.max(...levels) >= 2, '>= 2'),
    ...(t
      ? [
          target(
            'transfer: production against base',
            roundTo(t.mean * 100, 1),
            `points [${signed(t.low)}, ${signed(t.high)}]`,
            t.mean >= 0.25 && t.low > 0,
            '>= 25, CI above 0',
          ),
        ]
      : []),
    target('promoted cycles worse on a suite', regressed, 'cycles', regressed === 0, '= 0'),
  ];
}
