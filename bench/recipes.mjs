// Which recipe makes a later night's candidate better than production? From one project at a night's end, each
// recipe trains a candidate from the same start weights (production, unless the recipe says otherwise) on the same
// traces, and each is evaluated against production on the eval split with the same seeds (production's results are
// measured once and reused), so the recipes differ only in how they train. The candidates' gains, their CIs, the
// categories they lose and whether the deploy gates would promote them, side by side.
// RECIPES_FROM=dir starts from a kept project (a nights run's NIGHTS_DIR between cycles; it is copied, never
// changed); without it the benchmark first runs RECIPES_NIGHTS (1) nights of the default loop in a fresh project.
// RECIPES_SET (that project's config, as NIGHTS_SET was for the kept run); RECIPES='name=key=v;key=v|name=…' the
// recipes (default below); RECIPES_DIR=path keeps the copies.
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../dist/config/load.js';
import { evaluate } from '../dist/pipeline/evaluate/evaluate.js';
import { train } from '../dist/pipeline/train/train.js';
import { withRuntime } from '../dist/runtime/runtime.js';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { comparison, cycle, datasetCounts } from './lib/cycles.mjs';
import { cpuSeconds } from './lib/efficacy-report.mjs';
import { nightsOverrides, setList } from './lib/nights-config.mjs';
import { progress, writeResult } from './lib/report.mjs';
import { roundTo } from './lib/stats.mjs';
import { makeTempDir, removeTempDir } from './lib/temp-dir.mjs';

const args = parseBenchArgs();
// The candidates of what made later nights worse (docs/benchmarks.md, the ten-night runs): how far a stacked adapter
// moves from production (learning rate, DPO's beta) and starting again from the base on every trace.
const DEFAULT_RECIPES = [
  'as configured=',
  'lr 5e-5=train.dpo.learning_rate=5e-5',
  'beta 0.5=train.dpo.beta=0.5',
  'from the base, every trace=train.base_model=resource:smollm2-135m-instruct@1;train.traces=all',
].join('|');
const RECIPES = (process.env.RECIPES ?? DEFAULT_RECIPES).split('|').map((spec) => {
  const at = spec.indexOf('=');
  return { name: spec.slice(0, at), changes: setList(spec.slice(at + 1)) };
});
const FROM = process.env.RECIPES_FROM ? path.resolve(process.env.RECIPES_FROM) : null;
const NIGHTS = Number(process.env.RECIPES_NIGHTS ?? 1);
const overrides = nightsOverrides({
  perSuite: Number(process.env.RECIPES_PER_SUITE ?? (args.quick ? 8 : 60)),
  quick: args.quick,
  changes: setList(process.env.RECIPES_SET),
});

const results = { benchmark: 'recipes', quick: args.quick, from: FROM, overrides, nights: [], recipes: [] };
const jsonFile = args.out ?? path.join('bench-results', 'recipes.json');
const save = () => writeResult(jsonFile, results);
const KEEP = process.env.RECIPES_DIR ? path.resolve(process.env.RECIPES_DIR) : null;
const root = KEEP ? (fs.mkdirSync(KEEP, { recursive: true }), KEEP) : makeTempDir('recipes');
const load = (dir, changes = []) => loadConfig({ cwd: dir, overrides: [...overrides, ...changes] });

/** One recipe in its own copy of the project: train, then the candidate against production. */
async function recipe({ name, changes }, start) {
  const dir = path.join(root, name.replace(/[^a-z0-9]+/gi, '-'));
  fs.cpSync(start, dir, { recursive: true });
  const note = (m) => progress(`  ${name}: ${m}`);
  const t0 = Date.now(),
    c0 = cpuSeconds();
  return withRuntime(load(dir, changes), async (rt) => {
    const tr = await train(rt, {
      onStage: note,
      onProgress: (p) => p.step % 20 === 0 && note(`step ${p.step}/${p.totalSteps}`),
    });
    const sets = rt.store().sets;
    const production = sets.get(sets.pointer('production').setId).version;
    const ev = await evaluate(rt, {
      candidate: `set:${tr.candidateSet.version}`,
      baseline: `set:${production}`,
      trigger: 'loop',
      onStage: note,
    });
    return {
      recipe: name,
      changes,
      production,
      candidate: tr.candidateSet.version,
      examples: tr.dataset.rows,
      dataset: datasetCounts(tr.dataset.dir),
      steps: tr.steps,
      vsProduction: comparison(ev),
      passed: ev.passed,
      failedGates: ev.gates.filter((g) => !g.passed).map((g) => `${g.gate}: ${g.detail}`),
      wallSeconds: roundTo((Date.now() - t0) / 1000, 1),
      cpuSeconds: roundTo(cpuSeconds() - c0, 1),
    };
  });
}

try {
  let start = FROM;
  if (!start) {
    start = path.join(root, 'nights');
    fs.mkdirSync(start, { recursive: true });
    for (let n = 1; n <= NIGHTS; n++) {
      progress(`night ${n} of ${NIGHTS} (the default loop) before the recipes`);
      results.nights.push(await cycle(() => load(start), `  night ${n}`));
      save();
    }
  }
  for (const r of RECIPES) {
    progress(`recipe "${r.name}"${r.changes.length ? ` (${r.changes.join(', ')})` : ''}`);
    try {
      results.recipes.push(await recipe(r, start));
    } catch (err) {
      progress(`  ${r.name}: ${err.message}`);
      results.recipes.push({ recipe: r.name, changes: r.changes, error: err.message });
    }
    save();
  }
} finally {
  if (!KEEP) removeTempDir(root);
}
results.finished = true;
save();
for (const r of results.recipes) {
  const d = r.vsProduction?.success?.diff;
  const pts = (x) => `${x >= 0 ? '+' : '−'}${Math.abs(x * 100).toFixed(1)}`;
  progress(
    r.error
      ? `${r.recipe}: ${r.error}`
      : `${r.recipe}: ${r.examples} examples, ${r.steps} steps; success Δ ${pts(d.mean)} (${pts(d.low)} … ${pts(d.high)}); `
          + `${r.passed ? 'would be promoted' : `refused by ${r.failedGates.map((g) => g.split(':')[0]).join(', ')}`}`,
  );
}
progress(`results: ${jsonFile}`);
