// The label-free benchmark's figures: each arm against the base as the references judge it, and the reward audit.
import { auditTable } from '../../dist/evaluation/reward-audit.js';
import { roundTo } from './stats.mjs';

const signed = (x) => `${x >= 0 ? '+' : '−'}${Math.abs(x * 100).toFixed(1)}`;
const points = (d) => (d ? `${signed(d.mean)} (${signed(d.low)} … ${signed(d.high)})` : '—');
const pct = (x) => (Number.isFinite(x) ? `${(x * 100).toFixed(1)} %` : '—');
/** The pairs each source made, and the rows kept when train.dpo.max_suite_share dropped some of them. */
function pairsOf(ds) {
  const made = Object.entries(ds?.counts ?? {}).filter(([k]) => k.endsWith('_pairs'));
  const text = made.map(([k, n]) => `${n} ${k.replace(/_pairs$/, '')}`).join(' + ') || '—';
  const over = ds?.dropped?.over_suite_share;
  return over ? `${text}, ${ds.rows} kept (${over} over the suite share)` : text;
}

/** Markdown: the arms side by side, then the audit table. */
export function labelFreeLines(r) {
  const head = [
    'arm',
    'trained on (steps)',
    'success, eval split: base → candidate',
    'Δ points (95 % CI)',
    'transfer: Δ points (95 % CI)',
    "its own gates (the loop's verdict)",
    'wall (CPU) min',
  ];
  const rows = r.arms.map((a) =>
    a.error
      ? [a.arm, `stopped: ${a.error}`, '', '', '', '', '']
      : [
          a.arm,
          `${pairsOf(a.dataset)} (${a.steps})`,
          `${pct(a.vsBase.success.base)} → ${pct(a.vsBase.success.production)}`,
          points(a.vsBase.success.diff),
          points(a.transfer?.success?.diff),
          a.passed
            ? 'pass'
            : `refused: ${a.gates
                .filter((g) => !g.passed)
                .map((g) => g.gate)
                .join(', ')}`,
          `${(a.wallSeconds / 60).toFixed(1)} (${(a.cpuSeconds / 60).toFixed(1)})`,
        ],
  );
  const table = (h, body) => [h, h.map(() => '---'), ...body].map((c) => `| ${c.join(' | ')} |`);
  const lines = r.arms.length ? table(head, rows) : [];
  const add = (more) => lines.push(...(lines.length ? [''] : []), ...more);
  if (r.audit) {
    const { head: auditHead, rows: auditRows } = auditTable(r.audit.families);
    add(table(auditHead, auditRows));
  }
  if (r.gateway) add(table(GATEWAY_HEAD, r.gateway.nights.map(gatewayRow)));
  if (r.massgen) add(table(MASSGEN_HEAD, r.massgen.nights.map(massgenRow)));
  return lines;
}

const GATEWAY_HEAD = [
  'night',
  'calls captured',
  'sessions taken (no majority)',
  'trained on (steps)',
  "its own gates (the loop's verdict)",
  'production: success, eval split, base → production',
  'Δ points (95 % CI)',
  'transfer: Δ points (95 % CI)',
  'wall (CPU) min',
];

const MASSGEN_HEAD = ['night', 'MassGen runs (imported)', ...GATEWAY_HEAD.slice(3)];

/** One night of arm (c) on MassGen: its runs, what the import kept, then as gatewayRow. */
function massgenRow(n) {
  const [night, , , ...rest] = gatewayRow({ ...n, traffic: { calls: 0, failed: 0 } });
  return [night, `${n.traffic.runs} (${n.imported.runs})`, ...rest];
}

/** One night of arm (c): the traffic, what the loop took and decided, and production as the references judge it. */
function gatewayRow(n) {
  const c = n.captured ?? {};
  const verdict = n.promoted
    ? 'promoted'
    : `not promoted${n.deploy?.failedGates?.length ? `: ${n.deploy.failedGates.map((g) => g.split(':')[0]).join(', ')}` : ` (${n.outcome})`}`;
  return [
    n.night,
    `${n.traffic.calls} (${n.traffic.failed} failed)`,
    `${c.taken ?? '—'} (${c.no_majority ?? '—'})`,
    `${n.examplesTrained ?? '—'} (${n.trainSteps ?? '—'})`,
    verdict,
    n.vsBase ? `v${n.production}: ${pct(n.vsBase.success.base)} → ${pct(n.vsBase.success.production)}` : 'the base',
    points(n.vsBase?.success?.diff),
    points(n.transfer?.success?.diff),
    `${(n.wallSeconds / 60).toFixed(1)} (${(n.cpuSeconds / 60).toFixed(1)})`,
  ];
}

/** The issue's targets: the label-free arm reaches 70 % of the default's gain, with its CI above 0. */
export function labelFreeHeadlines(r) {
  const measured = r.arms.filter((a) => !a.error);
  const byArm = Object.fromEntries(measured.map((a) => [a.arm, a.vsBase.success.diff]));
  const lines = measured.map((a) => ({
    label: `${a.arm}: Δ success against the base, eval split`,
    value: roundTo((a.vsBase.success.diff?.mean ?? NaN) * 100, 1),
    unit: `points [${signed(a.vsBase.success.diff?.low ?? NaN)}, ${signed(a.vsBase.success.diff?.high ?? NaN)}]`,
  }));
  const a = byArm.references,
    b = byArm['label-free'];
  if (a && b) {
    const share = a.mean > 0 ? b.mean / a.mean : NaN;
    lines.push({
      label: 'label-free gain / default gain',
      value: roundTo(share, 2),
      unit: '',
      target: '>= 0.7',
      ok: share >= 0.7,
    });
    lines.push({
      label: 'label-free CI lower bound',
      value: roundTo(b.low * 100, 1),
      unit: 'points',
      target: '> 0',
      ok: b.low > 0,
    });
  }
  for (const arm of [r.gateway, r.massgen]) {
    const last = arm?.nights.at(-1);
    if (!last) continue;
    const d = last.vsBase?.success?.diff;
    lines.push({
      label: `${arm.arm}: production after night ${last.night} against the base, eval split`,
      value: roundTo((d?.mean ?? 0) * 100, 1),
      unit: d ? `points [${signed(d.low)}, ${signed(d.high)}]` : 'points (production is the base)',
      target: 'CI above 0 after two or more nights',
      ok: arm.nights.length >= 2 && (d?.low ?? 0) > 0,
    });
  }
  return lines;
}
