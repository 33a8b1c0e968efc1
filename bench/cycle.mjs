// Where one loop cycle's time goes. From a fresh store with the embedded default team (the bundled model on the
// built-in llama.cpp server, independent answers), one `loop --once` (collect → review → train → eval → deploy)
// at the efficacy benchmark's settings (60 tasks per suite over its four suites, rejection sampling: SFT on the
// verified answers, 4 samples per decision, 2 epochs; --quick: 3 tasks per suite, 1 sample, 1 epoch), each in its
// own Node process (bench/lib/cycle-child.mjs). Per stage, from the profile the cycle records (docs/running-the-
// loop.md): wall, CPU of the loop process and of its children and servers, start-up (server spawn → ready,
// trainer spawn → first step), generation tokens/s over the time requests were in flight with the servers' mean
// rows per decoding step and prefill share, training examples/s, store write time and the unaccounted rest.
// Then, in the same run, raw llama.cpp batched decode of the bundled model at 16 sequences (bench/lib/
// raw_decode.py: no server, no HTTP, greedy), the ceiling each stage's generation tokens/s is given a share of.
//
// Two builds side by side: CYCLE_BUILDS=dirA,dirB (each a dist folder, or a worktree with a built dist/) runs a
// cycle of each per round from its own fresh store, the order alternating (A B, then B A), CYCLE_ROUNDS rounds
// (default 1); a build without the profile shows its stages' wall times only. CYCLE_PER_SUITE, CYCLE_SAMPLES,
// CYCLE_RAW_STEPS override the sizes.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { cycleTable, headlines, stageRows } from './lib/cycle-report.mjs';
import { progress, writeResult } from './lib/report.mjs';
import { defaultModelDir, trainerPython } from './lib/serve-servers.mjs';
import { makeTempDir, removeTempDir } from './lib/temp-dir.mjs';

const args = parseBenchArgs();
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SIZES = {
  full: { perSuite: 60, evalFraction: 0.3, samples: 4, epochs: 2, rawSteps: 64 },
  quick: { perSuite: 3, evalFraction: 0.3, samples: 1, epochs: 1, rawSteps: 16 },
};
const sz = { ...SIZES[args.quick ? 'quick' : 'full'] };
if (process.env.CYCLE_PER_SUITE) sz.perSuite = Number(process.env.CYCLE_PER_SUITE);
if (process.env.CYCLE_SAMPLES) sz.samples = Number(process.env.CYCLE_SAMPLES);
if (process.env.CYCLE_RAW_STEPS) sz.rawSteps = Number(process.env.CYCLE_RAW_STEPS);
const ROUNDS = Number(process.env.CYCLE_ROUNDS ?? 1);
const SUITES = ['arithmetic', 'unit_conversion', 'string_transform', 'multi_step'];

/** A dist folder, or a worktree holding one. */
function distOf(dir) {
  const abs = path.resolve(ROOT, dir);
  if (fs.existsSync(path.join(abs, 'pipeline', 'loop.js'))) return abs;
  if (fs.existsSync(path.join(abs, 'dist', 'pipeline', 'loop.js'))) return path.join(abs, 'dist');
  throw new Error(`CYCLE_BUILDS: ${dir} is neither a dist folder nor a worktree with a built dist/`);
}
const builds = (process.env.CYCLE_BUILDS ?? 'dist').split(',').filter(Boolean).map(distOf);

// The efficacy benchmark's recipe (rft: SFT on verified answers), with every stage of a cycle.
const yaml = [
  'tasks:',
  `  sources: [${SUITES.map((s) => `{ suite: ${s}, n: ${sz.perSuite} }`).join(', ')}]`,
  `  split: { eval_fraction: ${sz.evalFraction} }`,
  'rewards: { weights: { exact: 1, numeric: 1 } }',
  `collect: { split: train, concurrency: 2, samples_per_turn: ${sz.samples} }`,
  `train: { algo: sft, sft: { select: verified, max_per_task: 4, num_train_epochs: ${sz.epochs}, learning_rate: 0.0002, per_device_train_batch_size: 4, seed: 1 }, gates: { min_examples: 1, min_categories: 1, min_clean_share: 0 } }`,
  'eval: { split: eval, seeds: 1, metric: success_rate, report: false }',
  'loop: { steps: [collect, review, train, eval, deploy], min_new_traces: 1 }',
].join('\n');

function runCycle(dist, label) {
  const root = makeTempDir('cycle');
  try {
    fs.writeFileSync(path.join(root, 'massgen-rl.yaml'), yaml);
    const resultFile = path.join(root, 'cycle-result.json');
    progress(`${label}: one cycle on ${dist} (${SUITES.length} suites × ${sz.perSuite} tasks)`);
    const child = spawnSync(
      process.execPath,
      [path.join(ROOT, 'bench', 'lib', 'cycle-child.mjs'), '--dist', dist, '--root', root, '--result', resultFile],
      { stdio: ['ignore', 'inherit', 'inherit'] },
    );
    if (child.status !== 0 || !fs.existsSync(resultFile))
      throw new Error(`${label}: the cycle's process exited with ${child.status ?? child.signal}`);
    return JSON.parse(fs.readFileSync(resultFile, 'utf8'));
  } finally {
    removeTempDir(root);
  }
}

function rawDecode() {
  const model = defaultModelDir();
  progress(`raw llama.cpp decode: 16 sequences × ${sz.rawSteps} steps of ${model}`);
  const r = spawnSync(
    trainerPython(),
    [path.join(ROOT, 'bench', 'lib', 'raw_decode.py'), model, '--seqs', '16', '--steps', String(sz.rawSteps)],
    {
      encoding: 'utf8',
      env: { ...process.env, PYTHONPATH: path.join(ROOT, 'python'), HF_HUB_OFFLINE: '1' },
    },
  );
  if (r.status !== 0) throw new Error(`raw_decode.py failed (exit ${r.status}): ${r.stderr.slice(-800)}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1));
}

const results = { benchmark: 'cycle', quick: args.quick, sizes: sz, suites: SUITES, builds, rounds: ROUNDS, runs: [] };
const jsonFile = args.out ?? path.join('bench-results', 'cycle.json');
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 ? [...builds].reverse() : builds;
  for (const dist of order) {
    const label = `round ${round + 1}, build ${builds.indexOf(dist) + 1}`;
    results.runs.push({ round: round + 1, build: dist, ...runCycle(dist, label) });
    writeResult(jsonFile, results); // a run stopped part way keeps what it measured
  }
}
results.rawDecode = rawDecode();
results.table = results.runs.map((run) => ({
  round: run.round,
  build: run.build,
  status: run.status,
  outcome: run.outcome,
  stages: stageRows(run.stages, results.rawDecode.tokens_per_s),
}));
results.headline = headlines(results);
writeResult(jsonFile, results);
process.stderr.write(`\n${cycleTable(results)}\n`);
