import { roundInterval as ci, roundTo } from './stats.mjs';

const metricOf = (list, name) => list.find((m) => m.metric === name);

/** One evaluate() summary, candidate against baseline: success and mean reward with paired CIs, won/lost pairs. */
export function comparison(ev) {
  const pick = (list, name) => {
    const m = metricOf(list, name);
    return {
      baseline: roundTo(m?.baseline ?? NaN, 4),
      candidate: roundTo(m?.candidate ?? NaN, 4),
      diff: ci(m?.diff),
      wins: m?.counts.wins ?? null,
      losses: m?.counts.losses ?? null,
      pValue: roundTo(m?.pValue ?? NaN, 4),
    };
  };
  const tokens = metricOf(ev.comparison.overall, 'tokens');
  return {
    evalRunId: ev.evalRunId,
    baselineSet: ev.baseline.version,
    candidateSet: ev.candidate.version,
    pairs: ev.comparison.pairs,
    measured: ev.measured,
    reused: ev.reused,
    gatesPassed: ev.passed,
    failedGates: ev.gates.filter((g) => !g.passed).map((g) => g.gate),
    success: pick(ev.comparison.overall, 'success'),
    reward: pick(ev.comparison.overall, 'reward'),
    tokensPerTask: { baseline: roundTo(tokens?.baseline ?? NaN, 1), candidate: roundTo(tokens?.candidate ?? NaN, 1) },
    categories: ev.comparison.categories.map((c) => ({
      category: c.category,
      pairs: c.pairs,
      success: pick(c.metrics, 'success'),
    })),
  };
}

const pct = (x) => (Number.isFinite(x) ? `${(x * 100).toFixed(1)} %` : '—');
const signed = (x) => `${x >= 0 ? '+' : '−'}${Math.abs(x * 100).toFixed(1)}`;
const points = (d) => (d ? `${signed(d.mean)} [${signed(d.low)}, ${signed(d.high)}]` : '—');
// Half away from zero, as toFixed rounds the printed lines.
const pointsOf = (x) => Math.sign(x) * roundTo(Math.abs(x * 100), 1);
const signed3 = (x) => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(3)}`;
const rewardDiff = (d) => (d ? `${signed3(d.mean)} [${signed3(d.low)}, ${signed3(d.high)}]` : '—');

/**
 * The targets of the comparison: (b) at least (a) on the point estimate, (b) significantly better (CI above 0),
 * and the roles whose own effect has its CI above 0; with one plain sentence.
 */
export function verdict(results) {
  const d = results.bVsA?.success.diff;
  const roles = results.arms.b?.roles ?? [];
  const above = roles.filter((r) => r.ownEffect?.success.diff?.low > 0).map((r) => r.role);
  if (!d) {
    const text = 'no (b) − (a) comparison';
    return { bAtLeastA: null, bBeatsA: null, rolesAboveZero: above, targetMet: null, text };
  }
  const bAtLeastA = d.mean >= 0;
  const bBeatsA = d.low > 0;
  const how = bBeatsA
    ? 'beat'
    : d.high < 0
      ? 'did significantly worse than'
      : bAtLeastA
        ? 'matched or beat, not significantly,'
        : 'did worse, not significantly, than';
  const text =
    `(b) per-role adapters ${how} (a) one shared adapter: ${points(d)} points of success over `
    + `${results.bVsA.pairs} pairs; roles whose own effect has its CI above 0: ${above.join(', ') || 'none'}`;
  return { bAtLeastA, bBeatsA, rolesAboveZero: above, targetMet: bAtLeastA && above.length > 0, text };
}

/** The printed table: each arm and each role against the base, then (b) against (a). */
export function summaryLines(results) {
  const rows = [];
  const row = (label, c, extra = '') =>
    rows.push(
      `  ${label.padEnd(34)} ${pct(c?.success.baseline).padStart(7)} → ${pct(c?.success.candidate).padStart(7)}  `
        + `${points(c?.success.diff).padEnd(24)} ${rewardDiff(c?.reward.diff).padEnd(26)} ${extra}`,
    );
  rows.push(
    `  ${'candidate vs baseline'.padEnd(34)} ${'success'.padStart(17)}  ${'Δ points [95 % CI]'.padEnd(24)} `
      + `${'Δ mean reward [95 % CI]'.padEnd(26)} training`,
  );
  const { a, b } = results.arms;
  const trained = (arm) => (arm?.train ? `${arm.train.examples} examples, ${arm.train.wallSeconds} s` : '');
  if (a?.vsBase) row('(a) one adapter vs base', a.vsBase, trained(a));
  if (b?.vsBase) row('(b) roles vs base', b.vsBase, trained(b));
  for (const r of b?.roles ?? []) {
    const how = r.status === 'trained' ? `${r.examples} examples, ${r.trainSeconds} s` : `skipped: ${r.reason}`;
    if (r.ownEffect) row(`  role ${r.role} alone vs base`, r.ownEffect, how);
    else rows.push(`    role ${r.role}: ${how}`);
  }
  if (results.bVsA) row('(b) vs (a)', results.bVsA);
  return rows;
}

/** The summary's headline lines: each arm's gain over the base, (b) − (a), each role's own effect, the verdict. */
export function rolesHeadlines(results, headline) {
  const lines = [];
  const gain = (label, c) => {
    const d = c?.success.diff;
    if (d) {
      const unit = `points [${signed(d.low)}, ${signed(d.high)}]`;
      const what = `${label} ${pct(c.success.baseline)} → ${pct(c.success.candidate)}`;
      lines.push(headline(what, pointsOf(d.mean), unit));
    }
  };
  gain('(a) one adapter vs base:', results.arms.a?.vsBase);
  gain('(b) roles vs base:', results.arms.b?.vsBase);
  gain('(b) vs (a):', results.bVsA);
  for (const r of results.arms.b?.roles ?? []) gain(`role ${r.role} alone vs base:`, r.ownEffect);
  const v = results.verdict;
  if (v && v.bAtLeastA !== null) {
    lines.push(headline('(b) ≥ (a) (point estimate)', v.bAtLeastA ? 'yes' : 'no', ''));
    lines.push(headline('(b) > (a) (CI above 0)', v.bBeatsA ? 'yes' : 'no', ''));
    lines.push(headline('roles with own effect CI above 0', v.rolesAboveZero.length, 'roles'));
  }
  return lines;
}
