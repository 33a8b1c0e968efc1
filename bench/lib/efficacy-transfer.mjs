import { exactBinomialTwoSided, pairedBootstrap } from '../../dist/evaluation/stats.js';
import { roundInterval as ci, roundTo } from './stats.mjs';

const successOf = (metrics) => metrics.find((m) => m.metric === 'success');

/** `transfer_arithmetic/addition` → `transfer_arithmetic`. */
const areaOf = (category) => category.split('/')[0];

function row(base, candidate, diff, counts, pValue) {
  return {
    base: roundTo(base ?? NaN, 4),
    candidate: roundTo(candidate ?? NaN, 4),
    diff: ci(diff),
    wins: counts.wins,
    ties: counts.ties,
    losses: counts.losses,
    // Three significant digits: a clear difference over 80 pairs has p far below 0.0001.
    pValue: Number.isFinite(pValue) ? Number(pValue.toPrecision(3)) : null,
  };
}

/**
 * Base against a candidate on the transfer tasks (an evaluate() summary): success overall and per skill area, with
 * the paired-bootstrap CI of the difference and the pairs won and lost. Success is 0 or 1, so each pair's
 * difference is +1 (won), 0 or −1 (lost) and an area's differences follow from its categories' counts.
 */
export function transferSummary(ev, boot) {
  const overall = successOf(ev.comparison.overall);
  const areas = new Map();
  for (const c of ev.comparison.categories) {
    const m = successOf(c.metrics);
    if (!m?.n) continue;
    const a = areas.get(areaOf(c.category)) ?? { n: 0, base: 0, candidate: 0, wins: 0, ties: 0, losses: 0 };
    a.n += m.n;
    a.base += m.baseline * m.n;
    a.candidate += m.candidate * m.n;
    a.wins += m.counts.wins;
    a.ties += m.counts.ties;
    a.losses += m.counts.losses;
    areas.set(areaOf(c.category), a);
  }
  return {
    evalRunId: ev.evalRunId,
    tasks: ev.tasks,
    pairs: ev.comparison.pairs,
    measured: ev.measured,
    reused: ev.reused,
    success: row(overall?.baseline, overall?.candidate, overall?.diff, overall?.counts ?? {}, overall?.pValue),
    areas: [...areas.entries()]
      .sort(([x], [y]) => x.localeCompare(y))
      .map(([area, a]) => {
        const diffs = [...Array(a.wins).fill(1), ...Array(a.ties).fill(0), ...Array(a.losses).fill(-1)];
        const p = exactBinomialTwoSided(a.wins, a.wins + a.losses);
        return { area, pairs: a.n, ...row(a.base / a.n, a.candidate / a.n, pairedBootstrap(diffs, boot), a, p) };
      }),
  };
}

const pct = (x) => (Number.isFinite(x) ? `${(x * 100).toFixed(1)} %` : '—');
// Half away from zero, as toFixed rounds the printed lines: −3.75 is −3.8 in both.
const pointsOf = (x) => Math.sign(x) * roundTo(Math.abs(x * 100), 1);
const signed = (x) => `${x >= 0 ? '+' : '−'}${Math.abs(x * 100).toFixed(1)}`;
const points = (d) => (d ? `${signed(d.mean)} [${signed(d.low)}, ${signed(d.high)}]` : '—');

/** Printed lines: each recipe's transfer success, base → candidate, overall and per skill area. */
export function transferLines(results) {
  const rows = results.ablation.filter((a) => a.transfer);
  if (!rows.length) return [];
  const lines = ['transfer set (held out, never trained on): success base → candidate, Δ points [95 % CI], won/lost'];
  for (const a of rows) {
    const t = a.transfer;
    if (t.error) {
      lines.push(`  ${a.recipe}: error: ${t.error}`);
      continue;
    }
    const s = t.success;
    lines.push(
      `  ${a.recipe.padEnd(5)} ${pct(s.base)} → ${pct(s.candidate)}, ${points(s.diff)}, ${s.wins}/${s.losses} of ${t.pairs}`,
    );
    for (const r of t.areas)
      lines.push(
        `    ${r.area.padEnd(26)} ${pct(r.base)} → ${pct(r.candidate)}, ${points(r.diff)}, ${r.wins}/${r.losses} of ${r.pairs}`,
      );
  }
  return lines;
}

/** Headline lines per recipe: the eval split's gain next to the transfer set's, in points. */
export function transferHeadlines(results, headline) {
  return results.ablation.flatMap((a) => {
    const evalDiff = a.candidateVsProduction?.success.diff;
    const t = a.transfer;
    return [
      ...(evalDiff ? [headline(`${a.recipe}: Δ success, eval split`, pointsOf(evalDiff.mean), 'points')] : []),
      ...(t?.success?.diff
        ? [
            headline(
              `${a.recipe}: Δ success, transfer ${pct(t.success.base)} → ${pct(t.success.candidate)}`,
              pointsOf(t.success.diff.mean),
              `points [${signed(t.success.diff.low)}, ${signed(t.success.diff.high)}]`,
            ),
          ]
        : []),
    ];
  });
}
