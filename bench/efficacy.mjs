// Does a cycle make the default team better? From a fresh store with the embedded default team (the
// bundled model, independent answers), K cycles of `loop --once` on the built-in suites' train split;
// after each cycle, production is evaluated against the base set on the eval split (same tasks and
// seeds; the base's results are measured once and reused): success and mean reward with paired-bootstrap
// 95 % CIs, per category, promoted or not, and the cycle's cost (wall time, CPU-seconds of this process
// and its children, tokens, examples trained).
// Ablation: in the same store, one train → eval per recipe on the first collect's traces (each algorithm
// reads the traces from the start), each candidate evaluated against the base set on the same eval tasks
// and seeds, with its deploy gates; then the main recipe's candidate goes through deploy, and cycles
// 2..K are whole cycles of it.
// Transfer: each recipe's candidate against the base on bench/transfer/tasks.jsonl (every task, both splits, the
// same seeds), hand-written tasks no recipe ever sees (bench/transfer/README.md): success per skill area, won/lost.
// EFFICACY_CYCLES=K, EFFICACY_RECIPES=rft,dpo,grpo,grpo_online,star,teacher,apo, EFFICACY_MAIN=rft (the recipe of the K-cycle run),
// star and teacher are rft plus the rows of train.sft.rationalize and train.sft.teacher: the teacher is the config model
// EFFICACY_TEACHER_MODEL at EFFICACY_TEACHER_URL (key from EFFICACY_TEACHER_KEY_ENV), else the bundled model itself.
// EFFICACY_CURRICULUM=0 runs cycles 2..K without tasks.curriculum (on by default unless EFFICACY_DIFFICULTY is set:
// each suite's level per cycle is recorded). EFFICACY_PER_SUITE and EFFICACY_SAMPLES override the sizes; EFFICACY_CONCURRENCY the orchestrations at a time
// (default 2, this machine's cores; more on a GPU); EFFICACY_DIFFICULTY one level (0–3) for every suite (default:
// each suite's default level). EFFICACY_DIR=path keeps the project there. EFFICACY_TRANSFER=0 skips the transfer set. EFFICACY_TRAIN_SECONDS gives every recipe's
// training the same wall-time budget (the trainers' max_train_seconds).
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../dist/config/load.js';
import { collect } from '../dist/pipeline/collect/collect.js';
import { suiteLevels } from '../dist/pipeline/collect/curriculum.js';
import { deploy } from '../dist/pipeline/deploy/deploy.js';
import { evaluate } from '../dist/pipeline/evaluate/evaluate.js';
import { train } from '../dist/pipeline/train/train.js';
import { withRuntime } from '../dist/runtime/runtime.js';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { againstBase, comparison, cycle, onTransfer, TRANSFER_TASKS } from './lib/cycles.mjs';
import { collectRecord, cpuSeconds, efficacyHtml } from './lib/efficacy-report.mjs';
import { transferHeadlines, transferLines } from './lib/efficacy-transfer.mjs';
import { headline, progress, writeResult } from './lib/report.mjs';
import { roundTo } from './lib/stats.mjs';
import { makeTempDir, removeTempDir } from './lib/temp-dir.mjs';

const args = parseBenchArgs();
const SIZES = {
  full: { perSuite: 80, evalFraction: 0.3, samples: 4, epochs: 2, cycles: 3 },
  quick: { perSuite: 6, evalFraction: 0.3, samples: 2, epochs: 1, cycles: 1 },
};
const sz = { ...SIZES[args.quick ? 'quick' : 'full'] };
if (process.env.EFFICACY_PER_SUITE) sz.perSuite = Number(process.env.EFFICACY_PER_SUITE);
if (process.env.EFFICACY_SAMPLES) sz.samples = Number(process.env.EFFICACY_SAMPLES);
const SUITES = ['arithmetic', 'unit_conversion', 'string_transform', 'multi_step'];
const CYCLES = Number(process.env.EFFICACY_CYCLES ?? sz.cycles);
const RECIPES = (process.env.EFFICACY_RECIPES ?? 'rft,dpo,grpo').split(',').filter(Boolean);
const MAIN = process.env.EFFICACY_MAIN ?? 'rft';
const CONCURRENCY = Number(process.env.EFFICACY_CONCURRENCY ?? 2);
const DIFFICULTY = process.env.EFFICACY_DIFFICULTY === undefined ? null : Number(process.env.EFFICACY_DIFFICULTY);
const TRANSFER = process.env.EFFICACY_TRANSFER !== '0';
// The ablation's same wall-time budget: every recipe's training loop ends after the step that reaches it.
const TRAIN_SECONDS = process.env.EFFICACY_TRAIN_SECONDS ? Number(process.env.EFFICACY_TRAIN_SECONDS) : null;
// A fixed EFFICACY_DIFFICULTY and the curriculum's levels exclude each other (the config refuses both).
const CURRICULUM = process.env.EFFICACY_CURRICULUM !== '0' && DIFFICULTY === null;
const TEACHER = process.env.EFFICACY_TEACHER_URL
  ? {
      base_url: process.env.EFFICACY_TEACHER_URL,
      model: process.env.EFFICACY_TEACHER_MODEL ?? 'teacher',
      ...(process.env.EFFICACY_TEACHER_KEY_ENV ? { api_key_env: process.env.EFFICACY_TEACHER_KEY_ENV } : {}),
    }
  : null;

// Each recipe: its train keys and the loop's stages after collect.
const RECIPE = {
  rft: { algo: 'sft', keys: 'select: verified, max_per_task: 4', steps: ['train', 'eval'] },
  dpo: { algo: 'dpo', keys: 'pairs: correctness', steps: ['train', 'eval'] },
  grpo: { algo: 'grpo', keys: 'mode: offline', steps: ['train', 'eval'] },
  // Online: samples from the built-in llama.cpp server, the trained adapter synced into it (train.grpo.generation).
  grpo_online: { algo: 'grpo', keys: 'mode: online, generation: server, sync_steps: 2', steps: ['train', 'eval'] },
  star: {
    algo: 'sft',
    keys: 'select: verified, max_per_task: 4, rationalize: { samples: 4, max_tasks: 64 }',
    steps: ['train', 'eval'],
  },
  teacher: {
    algo: 'sft',
    keys: `select: verified, max_per_task: 4, teacher: { model: ${TEACHER ? 'teacher' : 'local'}, samples: 4, max_tasks: 64 }`,
    steps: ['train', 'eval'],
  },
  apo: { algo: 'sft', keys: '', steps: ['prompt_opt', 'eval'] },
};

/** The recipe's train keys, with the trainer's settings in its algo's section under the trainer's names. */
function trainKeys(recipe) {
  const { algo, keys } = RECIPE[recipe];
  const budget = TRAIN_SECONDS ? `, max_train_seconds: ${TRAIN_SECONDS}` : '';
  const settings = `num_train_epochs: ${sz.epochs}, learning_rate: 0.0002, per_device_train_batch_size: 4, seed: 1${budget}`;
  const gates = 'gates: { min_examples: 1, min_categories: 1, min_clean_share: 0 }';
  return `train: { algo: ${algo}, ${algo}: { ${keys ? `${keys}, ` : ''}${settings} }, ${gates} }`;
}

/** The models with a given teacher beside the embedded default's `local` (without one, `local` teaches). */
function models() {
  const local = '{ model: smollm2-135m-instruct, local: { weights: builtin:smollm2-135m-instruct } }';
  return `models: { local: ${local}, teacher: ${JSON.stringify(TEACHER)} }`;
}

function yaml(recipe, steps, curriculum = false) {
  // No `agents`: the embedded default team, as a new user runs it.
  return [
    ...(recipe === 'teacher' && TEACHER ? [models()] : []),
    'tasks:',
    ...(curriculum ? ['  curriculum: { enabled: true }'] : []),
    `  sources: [${SUITES.map((s) => `{ suite: ${s}, n: ${sz.perSuite}${DIFFICULTY === null ? '' : `, difficulty: ${DIFFICULTY}`} }`).join(', ')}]`,
    `  split: { eval_fraction: ${sz.evalFraction} }`,
    'rewards: { weights: { exact: 1, numeric: 1 } }',
    `collect: { split: train, concurrency: ${CONCURRENCY}, samples_per_turn: ${sz.samples} }`,
    trainKeys(recipe),
    'eval: { split: eval, seeds: 1, metric: success_rate, report: false }',
    `loop: { steps: [${steps.join(', ')}], min_new_traces: 1 }`,
  ].join('\n');
}

/**
 * One recipe of the ablation on every stored trace (`train --all`: a later recipe of the same algorithm would
 * otherwise find no trace past the earlier one's watermark), its candidate evaluated against production (the base).
 */
async function ablate(load, recipe, label) {
  if (RECIPE[recipe].steps[0] !== 'train') return cycle(load, label);
  return withRuntime(load(), async (rt) => {
    const t0 = Date.now(),
      c0 = cpuSeconds();
    const note = (m) => progress(`${label} ${m}`);
    const tr = await train(rt, {
      all: true,
      onStage: note,
      onProgress: (p) =>
        note(`step ${p.step}${p.totalSteps ? `/${p.totalSteps}` : ''} loss ${p.loss?.toFixed(4) ?? '—'}`),
    });
    const ev = await evaluate(rt, {
      candidate: `set:${tr.candidateSet.version}`,
      trigger: 'loop',
      onStage: note,
      onProgress: (p) => note(`eval ${p.done}/${p.total}`),
    });
    return {
      status: 'done',
      outcome: ev.passed ? 'gates passed' : 'gates failed',
      promoted: false,
      deploy: null,
      examplesTrained: tr.dataset.rows,
      trainSteps: tr.steps,
      budgetReached: tr.metrics.budget_reached ?? null,
      collectTokens: 0,
      candidateSet: ev.candidate.version,
      candidateVsProduction: comparison(ev),
      gatesPassed: ev.passed,
      failedGates: ev.gates.filter((g) => !g.passed).map((g) => `${g.gate}: ${g.detail}`),
      wallSeconds: roundTo((Date.now() - t0) / 1000, 1),
      cpuSeconds: roundTo(cpuSeconds() - c0, 1),
    };
  });
}

const results = {
  benchmark: 'efficacy',
  quick: args.quick,
  sizes: sz,
  concurrency: CONCURRENCY,
  difficulty: DIFFICULTY,
  suites: SUITES,
  cycles: CYCLES,
  main: MAIN,
  recipes: RECIPES,
  curriculum: CURRICULUM,
  trainSeconds: TRAIN_SECONDS,
  teacher: TEACHER ? { model: TEACHER.model, base_url: TEACHER.base_url } : 'the bundled model itself',
  transfer: TRANSFER ? path.relative(process.cwd(), TRANSFER_TASKS) : null,
  base: null,
  perCycle: [],
  ablation: [],
};
const jsonFile = args.out ?? path.join('bench-results', 'efficacy.json');
const htmlFile = path.join(path.dirname(jsonFile), 'efficacy.html');
// Written after every step, so a run stopped part-way still leaves what it measured.
function save() {
  results.headline = transferHeadlines(results, headline);
  writeResult(jsonFile, results);
  fs.writeFileSync(htmlFile, efficacyHtml(results));
}
// EFFICACY_DIR keeps the project (store, traces, training runs) in that new directory for a later look.
const KEEP = process.env.EFFICACY_DIR ? path.resolve(process.env.EFFICACY_DIR) : null;
if (KEEP && fs.existsSync(KEEP) && fs.readdirSync(KEEP).length) throw new Error(`EFFICACY_DIR ${KEEP} is not empty`);
const root = KEEP ? (fs.mkdirSync(KEEP, { recursive: true }), KEEP) : makeTempDir('efficacy');
try {
  const load = () => loadConfig({ cwd: root });
  const useRecipe = (recipe, steps, curriculum) =>
    fs.writeFileSync(path.join(root, 'massgen-rl.yaml'), yaml(recipe, steps, curriculum));
  // One collect from a fresh store: the traces every recipe's first cycle trains on.
  useRecipe(MAIN, ['collect']);
  const t0 = Date.now(),
    c0 = cpuSeconds();
  progress(
    `collect: the default team on the train split (${SUITES.join(', ')}, ${sz.perSuite} tasks each before the split, ${sz.samples} samples per decision)`,
  );
  const col = await withRuntime(load(), (rt) =>
    collect(rt, { onProgress: (p) => progress(`  ${p.done}/${p.total} done, ${p.failed} failed`) }),
  );
  results.base = {
    set: col.resourceSet.version,
    collect: collectRecord(col, t0, c0),
  };
  const baseVersion = col.resourceSet.version;
  save();

  // A first cycle's cost includes the collect its traces came from (run once, shared by the recipes).
  const bc = results.base.collect;
  let main = null;
  for (const recipe of [...new Set([MAIN, ...RECIPES])]) {
    try {
      useRecipe(recipe, RECIPE[recipe].steps);
      progress(`ablation ${recipe}: ${RECIPE[recipe].steps.join(' → ')} on the first collect's traces`);
      const c = await ablate(load, recipe, `  ${recipe}`);
      const entry = {
        recipe,
        ...c,
        collectTokens: bc.tokens,
        wallSeconds: roundTo(c.wallSeconds + bc.wallSeconds, 1),
        cpuSeconds: roundTo(c.cpuSeconds + bc.cpuSeconds, 1),
      };
      results.ablation.push(entry);
      if (recipe === MAIN) main = entry;
      save();
    } catch (err) {
      progress(`${recipe}: ${err.stack ?? err.message}`);
      results.ablation.push({ recipe, error: err.message });
    }
  }

  // Cycle 1 of the main recipe: its candidate through the deploy gates.
  if (main) {
    if (main.candidateSet) {
      const d = await withRuntime(load(), (rt) =>
        deploy(rt, { candidate: `set:${main.candidateSet}`, trigger: 'loop' }),
      );
      main.promoted = d.action === 'promoted';
      main.deploy = {
        status: 'done',
        action: d.action,
        reason: null,
        failedGates: d.gates.filter((g) => !g.passed).map((g) => `${g.gate}: ${g.detail}`),
      };
    }
    const against = await againstBase(load, baseVersion);
    results.perCycle.push({
      cycle: 1,
      ...main,
      recipe: undefined,
      production: against.production,
      vsBase: against.comparison,
    });
    save();
  }

  // After the main candidate's deploy, which reads the candidate's newest evaluation: that must be the eval split's.
  for (const entry of TRANSFER ? results.ablation.filter((a) => a.candidateSet) : []) {
    progress(`transfer ${entry.recipe}: the base against the candidate on ${results.transfer}`);
    try {
      entry.transfer = await onTransfer(load, baseVersion, entry.candidateSet, `  transfer ${entry.recipe}`);
    } catch (err) {
      progress(`transfer ${entry.recipe}: ${err.stack ?? err.message}`);
      entry.transfer = { error: err.message };
    }
    save();
  }
  for (const line of transferLines(results)) progress(line);

  // Cycles 2..K of the main recipe: whole cycles, collect included.
  useRecipe(MAIN, ['collect', ...RECIPE[MAIN].steps, 'deploy'], CURRICULUM);
  for (let k = 2; k <= CYCLES && main; k++) {
    progress(`cycle ${k} (${MAIN}${CURRICULUM ? ', curriculum on' : ''})`);
    const c = await cycle(load, `  cycle ${k}`);
    progress(`  cycle ${k}: ${c.outcome}`);
    const against = await againstBase(load, baseVersion);
    const levels = await withRuntime(load(), async (rt) => (CURRICULUM ? suiteLevels(rt) : null));
    results.perCycle.push({ cycle: k, ...c, levels, production: against.production, vsBase: against.comparison });
    save();
  }
} finally {
  if (!KEEP) removeTempDir(root);
}
results.finished = true;
save();
progress(`results: ${jsonFile}, ${htmlFile}`);
