// How often the deploy gates refuse an unchanged candidate, and how often they catch a planted regression, at the
// quickstart's size. The embedded default team (the bundled model on the built-in llama.cpp server) is measured on
// the quickstart's eval split (4 suites × 60 tasks, 30 % held out: 114 tasks) under GATES_SEEDS sampling seeds, as an
// evaluation measures it (one sample per decision). An A/A comparison (production against itself, same settings)
// takes, per task, two distinct seeds drawn at random as its baseline and candidate (GATES_DRAWS draws): the share
// the category gate refuses is its false-refusal rate, the share promoted (every gate passing) its false-promotion
// rate. Whole runs against each other (every task on seed a against seed b) are shown too: one run's calls share
// its seed's random stream across tasks, so they differ systematically. A planted regression fails every task of
// one category on the candidate's side of each drawn comparison; the share the category gate refuses is its
// detection rate. On mean reward (eval.metric's default) and on success, the current rule beside the old one (a
// bootstrap CI wholly below 0 per category, no correction). GATES_REUSE=FILE analyses a kept measurement
// (bench-results/gates-measured.json) again. Targets: A/A refusals ≤ 5 %, detection of a planted regression ≥ 80 %
// for the categories the gate tests. GATES_SEEDS, GATES_PER_SUITE override the sizes.
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../dist/config/load.js';
import { settingsHash, taskHash } from '../dist/evaluation/keys.js';
import { syncProduction } from '../dist/pipeline/production-sync.js';
import { batchFilling } from '../dist/rollouts/batch-fill.js';
import { scoreBatch } from '../dist/rollouts/score-batch.js';
import { onePerDecision, setupTeam } from '../dist/rollouts/team.js';
import { withRuntime } from '../dist/runtime/runtime.js';
import { tasksForRun } from '../dist/tasks/for-run.js';
import { Rng } from '../dist/tasks/prng.js';
import { createToolRunner } from '../dist/tools/runner.js';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { aaPairs, bySeed, drawnPairs, judge, plant, rate, seedPairs } from './lib/gate-rates.mjs';
import { headline, progress, writeResult } from './lib/report.mjs';
import { makeTempDir, removeTempDir } from './lib/temp-dir.mjs';

const args = parseBenchArgs();
const SIZES = { full: { perSuite: 60, seeds: 5 }, quick: { perSuite: 6, seeds: 3 } };
const sz = { ...SIZES[args.quick ? 'quick' : 'full'] };
if (process.env.GATES_SEEDS) sz.seeds = Number(process.env.GATES_SEEDS);
if (process.env.GATES_PER_SUITE) sz.perSuite = Number(process.env.GATES_PER_SUITE);
const SUITES = ['arithmetic', 'unit_conversion', 'string_transform', 'multi_step'];
const SEEDS = Array.from({ length: sz.seeds }, (_, i) => i + 1);
// The bootstrap decides only ci_lower_above_zero and the old category rule here: fewer resamples keep the many
// comparisons quick.
const BOOT = { resamples: 400, confidence: 0.95, seed: 1 };
const DRAWS = Number(process.env.GATES_DRAWS ?? 100);
const yaml = [
  'tasks:',
  `  sources: [${SUITES.map((s) => `{ suite: ${s}, n: ${sz.perSuite} }`).join(', ')}]`,
  '  split: { eval_fraction: 0.3 }',
  'eval: { split: eval, report: false }',
].join('\n');

/** Production's results on the eval split, every task under every seed, measured as an evaluation measures them. */
async function measureProduction(root) {
  fs.writeFileSync(path.join(root, 'massgen-rl.yaml'), yaml);
  return withRuntime(loadConfig({ cwd: root }), async (rt) => {
    const { config } = rt;
    const production = syncProduction(rt, 'bench');
    const tasks = tasksForRun(config.tasks, rt.paths.baseDir, { split: 'eval' });
    const store = rt.store();
    store.tasks.upsertMany(tasks);
    const evalRunId = store.evaluations.startRun(production.id, production.id, { seeds: SEEDS }, 'bench');
    progress(`production (set v${production.version}) on ${tasks.length} eval tasks × ${SEEDS.length} seeds`);
    const started = performance.now();
    let done = 0;
    const r = await scoreBatch({
      store,
      config,
      tools: createToolRunner(config.tools, rt.paths.baseDir),
      setup: onePerDecision(await setupTeam(rt, production, 'eval')),
      tasks: tasks.map((task) => ({ task, hash: taskHash(task) })),
      seeds: SEEDS,
      settingsHash: settingsHash(config),
      evalRunId,
      concurrency: config.eval.concurrency ?? batchFilling(config, config.collect.concurrency),
      signal: new AbortController().signal,
      claim: () => true,
      onResult: () => ++done % 50 === 0 && progress(`${done} of ${tasks.length * SEEDS.length} measured`),
    });
    store.evaluations.finishRun(evalRunId, 'completed', null);
    return {
      results: [...r.results.values()],
      tasks: tasks.length,
      wallS: (performance.now() - started) / 1000,
      gates: config.deploy.gates,
    };
  });
}

function rates(measured) {
  const tasks = bySeed(measured.results, SEEDS);
  const rng = new Rng(7);
  const drawn = Array.from({ length: DRAWS }, () => drawnPairs(tasks, SEEDS, rng));
  const aligned = seedPairs(SEEDS).map(([a, b]) => aaPairs(tasks, a, b));
  const out = {};
  for (const metric of ['reward', 'success']) {
    const count = (list, pick) => rate(list.filter(pick).length, list.length);
    const aa = drawn.map((ps) => judge(ps, metric, measured.gates, BOOT));
    const whole = aligned.map((ps) => judge(ps, metric, measured.gates, BOOT));
    const planted = aa[0].categories.map(({ category, pairs }) => {
      const runs = drawn.map((ps) => judge(plant(ps, category, tasks), metric, measured.gates, BOOT));
      return {
        category,
        pairs,
        tested: pairs >= measured.gates.category_min_pairs,
        detected: count(runs, (j) => j.category),
        detectedOld: count(runs, (j) => j.categoryOld),
      };
    });
    const tested = planted.filter((p) => p.tested);
    const pool = (rows, key) =>
      rate(
        rows.reduce((s, p) => s + p[key].k, 0),
        rows.reduce((s, p) => s + p[key].n, 0),
      );
    out[metric] = {
      aa: {
        comparisons: aa.length,
        categoryRefused: count(aa, (j) => j.category),
        categoryRefusedOld: count(aa, (j) => j.categoryOld),
        costRefused: count(aa, (j) => j.cost),
        promoted: count(aa, (j) => j.promoted),
      },
      wholeRuns: {
        comparisons: whole.length,
        categoryRefused: count(whole, (j) => j.category),
        categoryRefusedOld: count(whole, (j) => j.categoryOld),
        promoted: count(whole, (j) => j.promoted),
      },
      planted: {
        tested: pool(tested, 'detected'),
        testedOld: pool(tested, 'detectedOld'),
        all: pool(planted, 'detected'),
        allOld: pool(planted, 'detectedOld'),
        perCategory: planted,
      },
    };
  }
  return out;
}

const pct = (r) =>
  `${(100 * r.rate).toFixed(1)} % (${r.k}/${r.n}, ${(100 * r.low).toFixed(1)}–${(100 * r.high).toFixed(1)})`;
// The measurement is the slow part: kept beside the results, and GATES_REUSE=FILE analyses a kept one again.
const kept = path.join(path.dirname(args.out ?? 'bench-results/gates.json'), 'gates-measured.json');
const root = makeTempDir('gates');
try {
  let measured;
  if (process.env.GATES_REUSE) measured = JSON.parse(fs.readFileSync(process.env.GATES_REUSE, 'utf8'));
  else {
    measured = await measureProduction(root);
    fs.mkdirSync(path.dirname(kept), { recursive: true });
    fs.writeFileSync(kept, JSON.stringify(measured));
  }
  const figures = rates(measured);
  for (const [metric, f] of Object.entries(figures)) {
    progress(
      `${metric}: whole runs refused ${pct(f.wholeRuns.categoryRefused)}; drawn A/A category refusals ${pct(f.aa.categoryRefused)} (old rule ${pct(f.aa.categoryRefusedOld)}),`
        + ` promoted ${pct(f.aa.promoted)}; planted detected ${pct(f.planted.tested)} where tested`
        + ` (old ${pct(f.planted.testedOld)}), ${pct(f.planted.all)} over every category`,
    );
  }
  const r = figures.reward;
  writeResult(args.out, {
    benchmark: 'gates',
    sizes: { ...sz, tasks: measured.tasks, seeds: SEEDS.length },
    measureWallS: Math.round(measured.wallS),
    gates: measured.gates,
    figures,
    headline: [
      headline('A/A: category gate refuses (reward)', Math.round(1000 * r.aa.categoryRefused.rate) / 10, '%', 5),
      headline('A/A: same, the old rule', Math.round(1000 * r.aa.categoryRefusedOld.rate) / 10, '%'),
      headline('A/A: promoted (false promotion)', Math.round(1000 * r.aa.promoted.rate) / 10, '%', 5),
      {
        label: 'planted regression detected (tested categories)',
        value: Math.round(1000 * r.planted.tested.rate) / 10,
        unit: '%',
        target: '>= 80',
        ok: r.planted.tested.rate >= 0.8,
      },
      headline('planted regression detected, the old rule', Math.round(1000 * r.planted.testedOld.rate) / 10, '%'),
    ],
  });
} finally {
  removeTempDir(root);
}
