// The cycle benchmark's rows, text table and run-bench headline, from each stage's recorded profile.
import { headline } from './report.mjs';
import { roundTo } from './stats.mjs';

const STAGES = ['collect', 'review', 'train', 'prompt_opt', 'eval', 'deploy'];
const s = (ms) => (typeof ms === 'number' ? roundTo(ms / 1000, 1) : null);

/** One row per stage that ran; a build that records no profile gives its stages' wall time only. */
export function stageRows(stages, rawTokensPerS) {
  return STAGES.flatMap((stage) => {
    const rec = stages[stage];
    if (!rec) return [];
    const p = rec.profile;
    const wall = p?.wall_ms ?? (rec.finished_at ? rec.finished_at - rec.started_at : null);
    const tps = p?.generation.completion_tokens ? p.generation.tokens_per_s : null;
    return [
      {
        stage,
        status: rec.status,
        wallS: s(wall),
        cpuSelfS: s(p?.cpu_ms.self),
        cpuChildrenS: s(p?.cpu_ms.children),
        startupS: s(p?.startup.ms),
        convertS: s(p?.startup.convert_ms),
        generationS: s(p?.generation.ms),
        completionTokens: p?.generation.completion_tokens ?? null,
        tokensPerS: tps,
        shareOfRawDecode: tps !== null && rawTokensPerS > 0 ? roundTo(tps / rawTokensPerS, 3) : null,
        rowsPerDecodeStep: p?.generation.occupancy ?? null,
        prefillShare: p?.generation.prefill_share ?? null,
        trainingSteps: p?.training.steps ?? null,
        examplesPerS: p?.training.examples_per_s ?? null,
        storeMs: p ? roundTo(p.store.ms, 1) : null,
        idleS: s(p?.idle_ms),
      },
    ];
  });
}

const COLUMNS = [
  ['stage', 'stage'],
  ['wall s', 'wallS'],
  ['cpu self s', 'cpuSelfS'],
  ['cpu children s', 'cpuChildrenS'],
  ['start-up s', 'startupS'],
  ['gen tok/s', 'tokensPerS'],
  ['of raw', 'shareOfRawDecode'],
  ['rows/step', 'rowsPerDecodeStep'],
  ['prefill', 'prefillShare'],
  ['train ex/s', 'examplesPerS'],
  ['store ms', 'storeMs'],
  ['idle s', 'idleS'],
];

/** The headline table as text: one block per cycle run. */
export function cycleTable(results) {
  const raw = results.rawDecode;
  const lines = [`raw llama.cpp decode, 16 sequences: ${raw.tokens_per_s} tokens/s (${raw.threads} threads)`];
  for (const run of results.table) {
    lines.push('', `round ${run.round}, ${run.build}: ${run.status}, ${run.outcome}`);
    const cells = run.stages.map((row) => COLUMNS.map(([, key]) => (row[key] === null ? '—' : String(row[key]))));
    const width = COLUMNS.map(([head], i) => Math.max(head.length, ...cells.map((c) => c[i].length)));
    const line = (c) => c.map((x, i) => (i ? x.padStart(width[i]) : x.padEnd(width[i]))).join('  ');
    lines.push(line(COLUMNS.map(([head]) => head)), ...cells.map(line));
  }
  lines.push('', ...evalLines(results));
  for (const c of compareBuilds(results)) {
    const stages = Object.entries(c.stageWallRatio).map(([st, r]) => `${st} ${r}×`);
    lines.push(`build ${c.build} / build 1: cycle wall ${c.wallRatio}×, CPU ${c.cpuRatio}×; ${stages.join(', ')}`);
  }
  return lines.join('\n');
}

/** run-bench's summary lines: the first build's first cycle per stage, the raw decode ceiling, and with several
 * builds each later build against the first (the target: the whole cycle at most 0.5× the wall time). */
export function headlines(results) {
  const first = results.table[0];
  const out = [headline('raw llama.cpp decode, 16 sequences', results.rawDecode.tokens_per_s, 'tokens/s')];
  for (const row of first?.stages ?? []) {
    out.push(headline(`${row.stage}: wall`, row.wallS ?? NaN, 's'));
    if (row.tokensPerS !== null) out.push(headline(`${row.stage}: generation`, row.tokensPerS, 'tokens/s'));
  }
  for (const c of compareBuilds(results)) {
    out.push(headline(`build ${c.build} / build 1: cycle wall`, c.wallRatio, '×', 0.5));
    out.push(headline(`build ${c.build} / build 1: cycle CPU`, c.cpuRatio, '×'));
    for (const [stage, ratio] of Object.entries(c.stageWallRatio)) out.push(headline(`… ${stage} wall`, ratio, '×'));
  }
  return out;
}

const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);

/** Each build after the first against the first, over the rounds: the ratios of the mean cycle wall and CPU and of
 * each stage's mean wall. */
export function compareBuilds(results) {
  const of = (build) => results.runs.filter((r) => r.build === build);
  const stageWall = (runs, stage) => mean(runs.map((r) => r.stages[stage]?.profile?.wall_ms ?? NaN));
  const [base, ...others] = results.builds;
  const baseRuns = of(base);
  return others.map((build) => {
    const runs = of(build);
    const ratio = (f) => roundTo(mean(runs.map(f)) / mean(baseRuns.map(f)), 3);
    const stageWallRatio = Object.fromEntries(
      ['collect', 'train', 'eval'].map((st) => [st, roundTo(stageWall(runs, st) / stageWall(baseRuns, st), 3)]),
    );
    return {
      build: results.builds.indexOf(build) + 1,
      wallRatio: ratio((r) => r.wallSeconds),
      cpuRatio: ratio((r) => r.cpuSeconds),
      stageWallRatio,
    };
  });
}

/** Every run's evaluation, overall and per suite: success of baseline and candidate, the difference and its CI. */
export function evalLines(results) {
  const pct = (x) => (typeof x === 'number' ? (100 * x).toFixed(1) : '—');
  const ci = (d) => (d ? `${pct(d.mean)} (${pct(d.low)} … ${pct(d.high)})` : '—');
  return results.runs.flatMap((run) => {
    const ev = run.stages.eval;
    if (!ev?.diff) return [];
    const head = `round ${run.round}, build ${results.builds.indexOf(run.build) + 1}: success ${pct(ev.baseline)} % → ${pct(ev.candidate)} %, ${ci(ev.diff)} points`;
    const suites = (run.suites ?? []).map(
      (s) => `  ${s.category} (${s.pairs}): ${pct(s.baseline)} % → ${pct(s.candidate)} %, ${ci(s.diff)}`,
    );
    return [head, ...suites];
  });
}
