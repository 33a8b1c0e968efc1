// What the efficacy and nights benchmarks measure of a loop cycle: one `loop --once` with its cost, production
// against the base on the eval split, and a candidate against the base on the hand-written transfer set.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { evaluate } from '../../dist/pipeline/evaluate/evaluate.js';
import { runCycle } from '../../dist/pipeline/loop/loop.js';
import { withRuntime } from '../../dist/runtime/runtime.js';
import { cpuSeconds } from './efficacy-report.mjs';
import { transferSummary } from './efficacy-transfer.mjs';
import { progress } from './report.mjs';
import { roundInterval as ci, roundTo } from './stats.mjs';

export const TRANSFER_TASKS = fileURLToPath(new URL('../transfer/tasks.jsonl', import.meta.url));

const metricOf = (list, name) => list.find((m) => m.metric === name);

/** An evaluate() summary as the benchmarks keep it: success and reward (base, production, Δ with CI), per category and level. */
export function comparison(ev) {
  const pick = (list) =>
    Object.fromEntries(
      ['success', 'reward'].map((name) => {
        const m = metricOf(list, name);
        return [
          name,
          {
            base: roundTo(m?.baseline ?? NaN, 4),
            production: roundTo(m?.candidate ?? NaN, 4),
            diff: ci(m?.diff),
            pValue: roundTo(m?.pValue ?? NaN, 4),
          },
        ];
      }),
    );
  const tokens = metricOf(ev.comparison.overall, 'tokens');
  return {
    pairs: ev.comparison.pairs,
    // eval.sequential: the seeds the last look had (one look: eval.seeds)
    seeds: ev.seeds?.length ?? null,
    measured: ev.measured,
    reused: ev.reused,
    ...pick(ev.comparison.overall),
    tokensPerTask: { base: roundTo(tokens?.baseline ?? NaN, 1), production: roundTo(tokens?.candidate ?? NaN, 1) },
    categories: ev.comparison.categories.map((c) => ({ category: c.category, pairs: c.pairs, ...pick(c.metrics) })),
    // Each suite@level: the curriculum's levels above 0 are measured for both sides once a suite reaches them.
    levels: (ev.levels ?? []).map((l) => ({
      suite: l.suite,
      level: l.level,
      pairs: l.pairs,
      success: {
        base: roundTo(l.baseline.success, 4),
        production: roundTo(l.candidate.success, 4),
        diff: ci(l.diff.success),
      },
    })),
  };
}

/** Production against the base set on the eval split (stored results are reused: the base's once measured, a promoted candidate's from its cycle's eval). */
export async function againstBase(load, baseVersion) {
  return withRuntime(load(), async (rt) => {
    const sets = rt.store().sets;
    const pointer = sets.pointer('production');
    const version = pointer ? sets.get(pointer.setId).version : baseVersion;
    if (version === baseVersion) return { production: version, comparison: null };
    return {
      production: version,
      comparison: comparison(await evaluate(rt, { candidate: `set:${version}`, baseline: `set:${baseVersion}` })),
    };
  });
}

/** Base against a candidate on every transfer task, both splits, paired on the same tasks and seeds. */
export async function onTransfer(load, baseVersion, candidateSet, label) {
  return withRuntime(load(), async (rt) => {
    const ev = await evaluate(rt, {
      candidate: `set:${candidateSet}`,
      baseline: `set:${baseVersion}`,
      tasks: TRANSFER_TASKS,
      split: 'all',
      onProgress: (p) => progress(`${label} ${p.done}/${p.total} done`),
    });
    return transferSummary(ev, rt.config.eval.bootstrap);
  });
}

/**
 * One `loop --once`, with what it cost and what its eval stage measured (the new candidate against production);
 * `extra(rt, result)` adds a benchmark's own fields, read while the runtime is open.
 */
export async function cycle(load, label, extra = () => ({})) {
  return withRuntime(load(), async (rt) => {
    const t0 = Date.now(),
      c0 = cpuSeconds();
    const r = await runCycle(rt, { onStage: (stage, m) => progress(`${label} ${stage}: ${m}`) });
    const wallSeconds = roundTo((Date.now() - t0) / 1000, 1),
      cpu = roundTo(cpuSeconds() - c0, 1);
    const { train, eval: ev, deploy, collect: col } = r.stages;
    const store = rt.store();
    const run = typeof train?.training_run_id === 'string' ? store.trainingRuns.get(train.training_run_id) : undefined;
    const evalRun = typeof ev?.eval_run_id === 'string' ? store.evaluations.run(ev.eval_run_id) : undefined;
    return {
      status: r.status,
      outcome: r.outcome,
      promoted: deploy?.action === 'promoted',
      deploy: deploy
        ? {
            status: deploy.status,
            action: deploy.action ?? null,
            reason: deploy.reason ?? null,
            failedGates: (deploy.gates ?? []).filter((g) => !g.passed).map((g) => `${g.gate}: ${g.detail}`),
          }
        : null,
      examplesTrained: run?.detail?.dataset?.rows ?? null,
      trainSteps: train?.steps ?? null,
      budgetReached: run?.result?.budget_reached ?? null,
      collectTokens: col?.tokens ?? 0,
      candidateSet: evalRun?.summary?.candidate?.version ?? null,
      candidateVsProduction: evalRun?.summary ? comparison(evalRun.summary) : null,
      gatesPassed: evalRun?.summary?.passed ?? null,
      wallSeconds,
      cpuSeconds: cpu,
      ...(await extra(rt, r, run)),
    };
  });
}

/** What a training run's dataset held: its rows, builder counts and the commonest reasons candidates were left out. */
export function datasetCounts(dir) {
  const file = dir && path.join(dir, 'manifest.json');
  if (!file || !fs.existsSync(file)) return null;
  const { stats } = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (!stats) return null;
  const dropped = Object.entries(stats.dropped ?? {})
    .sort(([, a], [, b]) => b - a)
    .slice(0, 5);
  return { rows: stats.rows, counts: stats.counts, categories: stats.categories, dropped: Object.fromEntries(dropped) };
}
