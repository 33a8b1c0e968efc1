// Does a cycle make the default team better? From a fresh store with the embedded default team (the
// bundled model, independent answers), K cycles of `loop --once` on the built-in suites' train split;
// after each cycle, production is evaluated against the base set on the eval split (same tasks and
// seeds; the base's results are measured once and reused): success and mean reward with paired-bootstrap
// 95 % CIs, per category, promoted or not, and the cycle's cost (wall time, CPU-seconds of this process
// and its children, tokens, examples trained).
// Ablation: one cycle per recipe on the same collected traces (collected once, copied), same budget and
// seeds, each candidate evaluated against the base set.
// EFFICACY_CYCLES=K, EFFICACY_RECIPES=rft,dpo,grpo,apo, EFFICACY_MAIN=rft (the recipe of the K-cycle run).
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../dist/config/load.js';
import { collect } from '../dist/pipeline/collect.js';
import { evaluate } from '../dist/pipeline/evaluate.js';
import { runCycle } from '../dist/pipeline/loop.js';
import { withRuntime } from '../dist/runtime/runtime.js';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { cpuSeconds, efficacyHtml } from './lib/efficacy-report.mjs';
import { progress, writeResult } from './lib/report.mjs';
import { roundTo } from './lib/stats.mjs';
import { makeTempDir, removeTempDir } from './lib/temp-dir.mjs';

const args = parseBenchArgs();
const SIZES = {
  full: { perSuite: 40, evalFraction: 0.3, samples: 4, epochs: 2, cycles: 3 },
  quick: { perSuite: 6, evalFraction: 0.3, samples: 2, epochs: 1, cycles: 1 },
};
const sz = SIZES[args.quick ? 'quick' : 'full'];
const SUITES = ['arithmetic', 'unit_conversion', 'string_transform', 'multi_step'];
const CYCLES = Number(process.env.EFFICACY_CYCLES ?? sz.cycles);
const RECIPES = (process.env.EFFICACY_RECIPES ?? 'rft,dpo,grpo').split(',').filter(Boolean);
const MAIN = process.env.EFFICACY_MAIN ?? 'rft';

// Each recipe: its train keys and the loop's stages after collect.
const RECIPE = {
  rft: { train: 'algo: sft, sft: { select: verified, max_per_task: 4 }', steps: ['train', 'eval', 'deploy'] },
  dpo: { train: 'algo: dpo, dpo: { pairs: correctness }', steps: ['train', 'eval', 'deploy'] },
  grpo: { train: 'algo: grpo, grpo: { mode: offline }', steps: ['train', 'eval', 'deploy'] },
  apo: { train: 'algo: sft', steps: ['apo', 'eval', 'deploy'] },
};

function yaml(recipe, steps) {
  // No `agents`: the embedded default team, as a new user runs it.
  return [
    'tasks:',
    `  sources: [${SUITES.map((s) => `{ suite: ${s}, n: ${sz.perSuite} }`).join(', ')}]`,
    `  split: { eval_fraction: ${sz.evalFraction} }`,
    'rewards: { weights: { exact: 1, numeric: 1 } }',
    `collect: { split: train, concurrency: 2, samples_per_turn: ${sz.samples} }`,
    `train: { ${RECIPE[recipe].train}, epochs: ${sz.epochs}, learning_rate: 0.0002, batch_size: 4, seed: 1, gates: { min_examples: 1, min_categories: 1, min_clean_share: 0 } }`,
    'eval: { split: eval, seeds: 1, metric: success_rate, report: false }',
    `loop: { steps: [${steps.join(', ')}], min_new_traces: 1 }`,
  ].join('\n');
}

const ci = (d) => (d ? { mean: roundTo(d.mean, 4), low: roundTo(d.low, 4), high: roundTo(d.high, 4) } : null);
const metricOf = (list, name) => list.find((m) => m.metric === name);

function comparison(ev) {
  const pick = (list) => Object.fromEntries(['success', 'reward'].map((name) => {
    const m = metricOf(list, name);
    return [name, { base: roundTo(m?.baseline ?? NaN, 4), production: roundTo(m?.candidate ?? NaN, 4), diff: ci(m?.diff), pValue: roundTo(m?.pValue ?? NaN, 4) }];
  }));
  const tokens = metricOf(ev.comparison.overall, 'tokens');
  return {
    pairs: ev.comparison.pairs, measured: ev.measured, reused: ev.reused, ...pick(ev.comparison.overall),
    tokensPerTask: { base: roundTo(tokens?.baseline ?? NaN, 1), production: roundTo(tokens?.candidate ?? NaN, 1) },
    categories: ev.comparison.categories.map((c) => ({ category: c.category, pairs: c.pairs, ...pick(c.metrics) })),
  };
}

/** Production against the base set on the eval split (stored results are reused: the base's once measured, a promoted candidate's from its cycle's eval). */
async function againstBase(load, baseVersion) {
  return withRuntime(load(), async (rt) => {
    const sets = rt.store().sets;
    const pointer = sets.pointer('production');
    const version = pointer ? sets.get(pointer.setId).version : baseVersion;
    if (version === baseVersion) return { production: version, comparison: null };
    return { production: version, comparison: comparison(await evaluate(rt, { candidate: `set:${version}`, baseline: `set:${baseVersion}` })) };
  });
}

/** One `loop --once`, with what it cost and what its eval stage measured (the new candidate against production). */
async function cycle(load, label) {
  const t0 = Date.now(), c0 = cpuSeconds();
  const r = await withRuntime(load(), (rt) => runCycle(rt, { onStage: (stage, m) => progress(`${label} ${stage}: ${m}`) }));
  const wallSeconds = roundTo((Date.now() - t0) / 1000, 1), cpu = roundTo(cpuSeconds() - c0, 1);
  const { train, eval: ev, deploy, collect: col } = r.stages;
  return withRuntime(load(), (rt) => {
    const store = rt.store();
    const run = typeof train?.training_run_id === 'string' ? store.trainingRuns.get(train.training_run_id) : undefined;
    const evalRun = typeof ev?.eval_run_id === 'string' ? store.evaluations.run(ev.eval_run_id) : undefined;
    return {
      status: r.status, outcome: r.outcome, promoted: deploy?.action === 'promoted',
      deploy: deploy ? { status: deploy.status, action: deploy.action ?? null, reason: deploy.reason ?? null, failedGates: (deploy.gates ?? []).filter((g) => !g.passed).map((g) => `${g.gate}: ${g.detail}`) } : null,
      examplesTrained: run?.detail?.dataset?.rows ?? null, trainSteps: train?.steps ?? null, collectTokens: col?.tokens ?? 0,
      candidateVsProduction: evalRun?.summary ? comparison(evalRun.summary) : null,
      wallSeconds, cpuSeconds: cpu,
    };
  });
}

const results = { benchmark: 'efficacy', quick: args.quick, sizes: sz, suites: SUITES, cycles: CYCLES, main: MAIN, recipes: RECIPES, base: null, perCycle: [], ablation: [] };
const jsonFile = args.out ?? path.join('bench-results', 'efficacy.json');
const htmlFile = path.join(path.dirname(jsonFile), 'efficacy.html');
// Written after every step, so a run stopped part-way still leaves what it measured.
function save() {
  writeResult(jsonFile, results);
  fs.writeFileSync(htmlFile, efficacyHtml(results));
}
const root = makeTempDir('efficacy');
try {
  // One collect from a fresh store: the traces every recipe's first cycle trains on.
  const shared = path.join(root, 'shared');
  fs.mkdirSync(shared);
  fs.writeFileSync(path.join(shared, 'massgen-rl.yaml'), yaml(MAIN, ['collect']));
  const t0 = Date.now(), c0 = cpuSeconds();
  progress(`collect: the default team on the train split (${SUITES.join(', ')}, ${sz.perSuite} tasks each before the split, ${sz.samples} samples per decision)`);
  const col = await withRuntime(loadConfig({ cwd: shared }), (rt) => collect(rt, { onProgress: (p) => progress(`  ${p.done}/${p.total} done, ${p.failed} failed`) }));
  results.base = { set: col.resourceSet.version, collect: { tasks: col.tasks, completed: col.completed, failed: col.failed, meanReward: col.meanReward, tokens: col.tokens, wallSeconds: roundTo((Date.now() - t0) / 1000, 1), cpuSeconds: roundTo(cpuSeconds() - c0, 1) } };
  const baseVersion = col.resourceSet.version;
  save();

  for (const recipe of [...new Set([MAIN, ...RECIPES])]) {
    const dir = path.join(root, recipe);
    fs.cpSync(shared, dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'massgen-rl.yaml'), yaml(recipe, RECIPE[recipe].steps));
    const load = () => loadConfig({ cwd: dir });
    try {
      progress(`ablation ${recipe}: one cycle (${RECIPE[recipe].steps.join(' → ')}) on the shared traces`);
      const c = await cycle(load, `  ${recipe}`);
      const against = await againstBase(load, baseVersion);
      // A first cycle's cost includes the collect its traces came from (run once, shared by the recipes).
      const bc = results.base.collect;
      const entry = { recipe, ...c, collectTokens: bc.tokens, wallSeconds: roundTo(c.wallSeconds + bc.wallSeconds, 1), cpuSeconds: roundTo(c.cpuSeconds + bc.cpuSeconds, 1), production: against.production, vsBase: against.comparison };
      results.ablation.push(entry);
      if (recipe === MAIN) results.perCycle.push({ cycle: 1, ...entry, recipe: undefined });
      save();
    } catch (err) {
      progress(`${recipe}: ${err.stack ?? err.message}`);
      results.ablation.push({ recipe, error: err.message });
    }
  }

  // Cycles 2..K of the main recipe: whole cycles, collect included, on top of its first.
  const mainDir = path.join(root, MAIN);
  fs.writeFileSync(path.join(mainDir, 'massgen-rl.yaml'), yaml(MAIN, ['collect', ...RECIPE[MAIN].steps]));
  const load = () => loadConfig({ cwd: mainDir });
  for (let k = 2; k <= CYCLES && results.perCycle.length; k++) {
    progress(`cycle ${k} (${MAIN})`);
    const c = await cycle(load, `  cycle ${k}`);
    progress(`  cycle ${k}: ${c.outcome}`);
    const against = await againstBase(load, baseVersion);
    results.perCycle.push({ cycle: k, ...c, production: against.production, vsBase: against.comparison });
    save();
  }
} finally {
  removeTempDir(root);
}
results.finished = true;
save();
progress(`results: ${jsonFile}, ${htmlFile}`);
