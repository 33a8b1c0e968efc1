// Wrapper overhead of `massgen-rl train`: the same SFT and GRPO runs through the CLI and through TRL directly,
// alternated in one run so machine noise hits both, compared on optimizer steps per second.
//
//   wrapper: `node bin/massgen-rl.js --json train --algo ALGO --all --max-steps N` in a temp project whose store
//     holds MassGen-style team rollouts (bench/lib/train-overhead-store.mjs): config load, dataset build from the
//     store (reused after the first run, as in production), preflight, trainer.yaml, the bundled trainer
//     (`python -m massgen_rl_training.ALGO`) with its ProtocolCallback and JSON-lines step events read by Node
//     (metrics into the store, stderr into trainer.log), then checkpoint registration.
//   direct: bench/lib/trl_direct.py, plain TRL (SFTTrainer / GRPOTrainer) with the values of the trainer.yaml the
//     wrapper wrote (same model folder, LoRA, data.jsonl, TrainingArguments), no Node and no protocol; GRPO
//     offline replay reuses the bundled trainer's data preparation (see that file's docstring).
//
// Both sides run with the same step clock (bench/lib/train-overhead-site/sitecustomize.py): a TrainerCallback
// appended to every Trainer that stores time.perf_counter() and process CPU time at each optimizer step's end and
// writes them at train end. steps/s = (steps − 1) / (last step end − first step end): the training loop only,
// without model loading or the first (warm-up) step. The clock also dumps the TrainingArguments, callbacks, rows
// and trainable parameter count of both sides: the benchmark fails if the two sides' TrainingArguments differ
// (output paths aside). Also reported: whole-command wall time (with the time before and after the loop), HF's own
// train_steps_per_second (over all of trainer.train()), steps per trainer CPU second (robust to other load taking
// the core), the CPU the wrapper's Node process spends during the steps (/proc, polled), and the CPU cost per step
// of ProtocolCallback alone, outside training (bench/lib/protocol_callback_cost.py): the deterministic part of
// what the A/B runs measure under noise.
//
// Targets (wrapper at most 3 % slower): on the wall-clock steps/s ratio, as specified, and on a bound from CPU
// time (trainer CPU per step plus all of the Node process's CPU during the steps, against the direct trainer's CPU
// per step), which other load moves less. On the shared 2-core machine single wall-clock ratios moved by 10-60 %
// (perRoundSpreadPct shows how much in a run) and CPU-time ratios by up to ±13 % per round; medians of three
// rounds stayed within ±4 % of 1 in four full runs. attributablePct adds up what the wrapper does per step
// (ProtocolCallback CPU + Node CPU) against a direct step: the part of the overhead that is measured, not inferred.
//
// Per algorithm and round the wrapper and direct runs are adjacent (order alternating by round: A B, B A, ...);
// the ratio is the median of the per-round ratios wrapper/direct. One untimed wrapper run per algorithm first
// writes the dataset and trainer.yaml and warms caches. Every Python process runs with OMP_NUM_THREADS=1 (both
// sides): on this shared 2-core machine two intra-op threads stall on each other when other work preempts one
// of them (steps were 5-10x slower and far noisier), which would bury a difference of a few per cent.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { headline, progress, writeResult } from './lib/report.mjs';
import { median, pairedRatio, roundTo } from './lib/stats.mjs';
import { makeTempDir, removeTempDir } from './lib/temp-dir.mjs';
import { buildTrainStore } from './lib/train-overhead-store.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = path.join(ROOT, 'bin', 'massgen-rl.js');
const DIRECT = path.join(ROOT, 'bench', 'lib', 'trl_direct.py');
const PROTOCOL_COST = path.join(ROOT, 'bench', 'lib', 'protocol_callback_cost.py');
const SITE = path.join(ROOT, 'bench', 'lib', 'train-overhead-site');
const PYTHON_DIR = path.join(ROOT, 'python');
const ALGOS = ['sft', 'grpo'];
/** The wrapper may be at most this many per cent slower in steps/s. */
const TARGET_SLOWDOWN_PCT = 3;
/**
 * full: 12 timed runs (2 algorithms x 2 sides x 3 rounds) of 12 steps: about 12-16 minutes on the shared 2-core
 * machine (a step takes 2-5 s there, a run's start-up and save ~20 s). Three rounds give a median of paired ratios
 * that one disturbed round cannot move. BENCH_TRAIN_OVERHEAD_STEPS / BENCH_TRAIN_OVERHEAD_ROUNDS override both
 * sizes (e.g. 30 steps on a quiet machine).
 */
const SIZES = {
  full: {
    steps: envInt('BENCH_TRAIN_OVERHEAD_STEPS', 12),
    rounds: envInt('BENCH_TRAIN_OVERHEAD_ROUNDS', 3, 1),
    warmupSteps: 1,
    tasks: 24,
    rolloutsPerTask: 6,
  },
  quick: {
    steps: envInt('BENCH_TRAIN_OVERHEAD_STEPS', 4),
    rounds: envInt('BENCH_TRAIN_OVERHEAD_ROUNDS', 1, 1),
    warmupSteps: 1,
    tasks: 12,
    rolloutsPerTask: 4,
  },
};

function envInt(name, fallback, min = 2) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name}=${raw}: expected a whole number >= ${min}`);
  return n;
}

/**
 * Per algorithm, its own project (config + store): small enough that a step takes a few seconds on 2 CPU cores;
 * both sides of an algorithm read the same trainer.yaml. GRPO counts completions in batch_size, so 2 = one
 * prompt with its 2 replayed completions per step; SFT takes one row per step.
 */
const TRAIN = {
  sft: { batch_size: 1, extra: '  sft: { reward_threshold: 1 }' },
  grpo: { batch_size: 2, extra: '  grpo: { num_generations: 2, mode: offline }' },
};
const SEED = 42;
/** TrainingArguments keys allowed to differ between the sides (where each run writes). */
const PATH_ARGS = new Set(['output_dir', 'logging_dir', 'run_name']);

function projectYaml(algo) {
  return [
    `project: { name: train-overhead-${algo} }`,
    'rewards:',
    '  weights: { exact: 1, numeric: 1, coordination: 0.2, voting: 0.5 }',
    'train:',
    `  algo: ${algo}`,
    '  base_model: builtin:smollm2-135m-instruct',
    `  seed: ${SEED}`,
    `  batch_size: ${TRAIN[algo].batch_size}`,
    '  save_steps: 0',
    TRAIN[algo].extra,
    '  gates: { min_examples: 8, min_clean_share: 0, min_categories: 1 }',
    '',
  ].join('\n');
}

/** Environment shared by both sides; the wrapper passes it on to its trainer, the direct side gets it as is. */
function baseEnv() {
  return {
    ...process.env,
    OMP_NUM_THREADS: '1',
    MKL_NUM_THREADS: '1',
    HF_HUB_OFFLINE: '1',
    TRANSFORMERS_OFFLINE: '1',
    HF_DATASETS_OFFLINE: '1',
    HF_HUB_DISABLE_TELEMETRY: '1',
    TOKENIZERS_PARALLELISM: 'false',
    PYTHONUNBUFFERED: '1',
    PYTHONPATH: [SITE, process.env.PYTHONPATH].filter(Boolean).join(':'),
    NO_COLOR: '1',
  };
}

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU seconds (user + system) the process has used so far, from /proc (Linux); null elsewhere or once it is gone. */
function procCpuS(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return null;
  }
}

/** CPU seconds a polled process used between two epoch-ms instants (linear between polls); null without polls. */
function cpuBetween(polls, fromMs, toMs) {
  if (polls.length < 2 || fromMs < polls[0][0] || toMs > polls.at(-1)[0]) return null;
  const at = (t) => {
    const i = polls.findIndex(([ms]) => ms >= t);
    const [[t0, c0], [t1, c1]] = [polls[Math.max(0, i - 1)], polls[i]];
    return t1 === t0 ? c1 : c0 + ((c1 - c0) * (t - t0)) / (t1 - t0);
  };
  return at(toMs) - at(fromMs);
}

/**
 * Runs a command to completion; stdout is captured, stderr goes to a file. Returns wall time and output, and with
 * pollCpu the command process's own CPU time every 250 ms (the wrapper's Node process: not its trainer child).
 */
function runCommand(command, args, { cwd, env, stderrFile, pollCpu = false }) {
  return new Promise((resolve, reject) => {
    const err = fs.openSync(stderrFile, 'a');
    const startedAt = Date.now();
    const t0 = performance.now();
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', err] });
    const chunks = [];
    const polls = [];
    const poll = () => {
      const cpu = procCpuS(child.pid);
      if (cpu !== null) polls.push([Date.now(), cpu]);
    };
    const timer = pollCpu ? setInterval(poll, 250) : null;
    child.stdout.on('data', (c) => chunks.push(c));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const wallS = (performance.now() - t0) / 1000;
      clearInterval(timer);
      fs.closeSync(err);
      const stdout = Buffer.concat(chunks).toString('utf8');
      if (code !== 0) {
        const tail = fs.readFileSync(stderrFile, 'utf8').split('\n').filter(Boolean).slice(-15).join('\n');
        return reject(
          new Error(
            `${path.basename(command)} ${args.slice(0, 3).join(' ')} exited ${code ?? signal}\n${stdout.slice(-2000)}\n${tail}`,
          ),
        );
      }
      resolve({ wallS, startedAt, endedAt: Date.now(), stdout, polls });
    });
  });
}

function readClock(file, expectSteps) {
  if (!fs.existsSync(file))
    throw new Error(`no step clock at ${file}: the bench sitecustomize was not loaded (PYTHONPATH?)`);
  const c = JSON.parse(fs.readFileSync(file, 'utf8'));
  fs.rmSync(file);
  if (c.steps.length !== expectSteps || c.global_step !== expectSteps)
    throw new Error(`expected ${expectSteps} steps, the clock saw ${c.steps.length} (global_step ${c.global_step})`);
  return c;
}

/** The figures of one run from its step clock and process times. */
function sample(clock, run, hfStepsPerS, extra = {}) {
  const steps = clock.steps;
  const loopS = steps.at(-1) - steps[0];
  const intervals = steps.slice(1).map((t, i) => t - steps[i]);
  const epochMs = (t) => (clock.begin_epoch + (t - clock.begin)) * 1000;
  const nodeCpuS = run.polls.length ? cpuBetween(run.polls, epochMs(steps[0]), epochMs(steps.at(-1))) : null;
  const cpuS = clock.cpu_steps.at(-1) - clock.cpu_steps[0];
  return {
    stepsPerS: (steps.length - 1) / loopS,
    cpuStepsPerS: (steps.length - 1) / cpuS,
    // Worst case for a saturated machine: every CPU second of the wrapper's Node process taken from the trainer.
    cpuWithNodeStepsPerS: (steps.length - 1) / (cpuS + (nodeCpuS ?? 0)),
    trainerCpuShare: (clock.cpu_steps.at(-1) - clock.cpu_steps[0]) / loopS,
    nodeCpuMsPerStep: nodeCpuS === null ? null : (nodeCpuS * 1000) / (steps.length - 1),
    firstToLastS: loopS,
    firstStepS: steps[0] - clock.begin,
    medianStepS: median(intervals),
    trainLoopS: clock.end - clock.begin,
    hfStepsPerS,
    wallS: run.wallS,
    beforeTrainS: (clock.begin_epoch * 1000 - run.startedAt) / 1000,
    afterTrainS: (run.endedAt - clock.end_epoch * 1000) / 1000,
    ...extra,
  };
}

/** CPU cost of ProtocolCallback per step, its events piped to us as in a trainer run (deterministic, noise-free). */
async function protocolCost(dir, env, python) {
  const stderrFile = path.join(dir, 'protocol-cost.stderr');
  await runCommand(python, [PROTOCOL_COST, '--steps', '5000'], {
    cwd: dir,
    env: { ...env, PYTHONPATH: [PYTHON_DIR, process.env.PYTHONPATH].filter(Boolean).join(':') },
    stderrFile,
  });
  return JSON.parse(fs.readFileSync(stderrFile, 'utf8').trim().split('\n').at(-1));
}

async function wrapperRun(dir, algo, steps, env) {
  const clockFile = path.join(dir, `clock-wrapper-${algo}.json`);
  const run = await runCommand(
    process.execPath,
    [BIN, '--json', 'train', '--algo', algo, '--all', '--max-steps', String(steps)],
    {
      cwd: dir,
      env: { ...env, MASSGEN_BENCH_STEP_CLOCK: clockFile },
      stderrFile: path.join(dir, `wrapper-${algo}.stderr`),
      pollCpu: true,
    },
  );
  const result = JSON.parse(run.stdout);
  const clock = readClock(clockFile, steps);
  const runDir = path.dirname(result.logFile);
  const trainerYaml = path.join(runDir, 'trainer.yaml');
  const cfg = parseYaml(fs.readFileSync(trainerYaml, 'utf8'));
  const python = fs
    .readFileSync(result.logFile, 'utf8')
    .split('\n')[0]
    .match(/ \$ (\S+) -m massgen_rl_training\./)?.[1];
  if (!python) throw new Error(`cannot tell the trainer command from ${result.logFile}`);
  return {
    run,
    clock,
    result,
    trainerYaml,
    cfg,
    python,
    runDir,
    sample: sample(clock, run, result.metrics.train_steps_per_second ?? null, { datasetReused: result.dataset.reused }),
  };
}

async function directRun(dir, algo, steps, env, python, configFile) {
  const clockFile = path.join(dir, `clock-direct-${algo}.json`);
  const out = path.join(dir, 'direct', algo);
  fs.rmSync(out, { recursive: true, force: true });
  const pyEnv = {
    ...env,
    PYTHONPATH: [SITE, PYTHON_DIR, process.env.PYTHONPATH].filter(Boolean).join(':'),
    MASSGEN_BENCH_STEP_CLOCK: clockFile,
  };
  const run = await runCommand(python, [DIRECT, '--algo', algo, '--config', configFile, '--output-dir', out], {
    cwd: dir,
    env: pyEnv,
    stderrFile: path.join(dir, `direct-${algo}.stderr`),
  });
  // The last stdout line is the script's summary; TRL's own log prints (PrinterCallback) come before it.
  const summary = JSON.parse(run.stdout.trim().split('\n').at(-1));
  const clock = readClock(clockFile, steps);
  return {
    run,
    clock,
    summary,
    sample: sample(clock, run, summary.metrics.train_steps_per_second ?? null, {
      loadS: summary.load_s,
      saveS: summary.save_s,
    }),
  };
}

/** TrainingArguments that differ between the sides, output paths aside (should be none). */
function argDiff(a, b) {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys]
    .filter((k) => !PATH_ARGS.has(k) && JSON.stringify(a[k]) !== JSON.stringify(b[k]))
    .map((k) => ({ key: k, wrapper: a[k], direct: b[k] }));
}

function checkSame(algo, w, d) {
  const diff = argDiff(w.clock.args, d.clock.args);
  if (diff.length) throw new Error(`${algo}: the sides' TrainingArguments differ: ${JSON.stringify(diff)}`);
  for (const k of ['train_rows', 'trainable_params', 'max_steps']) {
    if (w.clock[k] !== d.clock[k])
      throw new Error(`${algo}: ${k} differs (wrapper ${w.clock[k]}, direct ${d.clock[k]})`);
  }
  if (path.resolve(w.cfg.dataset_path) !== path.resolve(d.cfg.dataset_path))
    throw new Error(`${algo}: the wrapper trained on ${w.cfg.dataset_path}, the direct side on ${d.cfg.dataset_path}`);
}

function fmt(s) {
  const node = s.nodeCpuMsPerStep === null ? '' : `, Node ${s.nodeCpuMsPerStep.toFixed(1)} CPU ms/step`;
  return `${s.stepsPerS.toFixed(4)} steps/s (median step ${s.medianStepS.toFixed(2)} s; ${s.cpuStepsPerS.toFixed(4)} per trainer CPU s, CPU share ${s.trainerCpuShare.toFixed(2)}${node}), wall ${s.wallS.toFixed(1)} s`;
}

function summarize(algo, rounds) {
  const w = rounds.map((r) => r.wrapper.sample);
  const d = rounds.map((r) => r.direct.sample);
  const med = (list, k) => median(list.map((s) => s[k]));
  const ratio = pairedRatio(
    w.map((s) => s.stepsPerS),
    d.map((s) => s.stepsPerS),
  );
  const perRound = w.map((s, i) => s.stepsPerS / d[i].stepsPerS);
  const cpuWithNodeRatio = pairedRatio(
    w.map((s) => s.cpuWithNodeStepsPerS),
    d.map((s) => s.cpuStepsPerS),
  );
  const hfRatio =
    w.every((s) => s.hfStepsPerS) && d.every((s) => s.hfStepsPerS)
      ? pairedRatio(
          w.map((s) => s.hfStepsPerS),
          d.map((s) => s.hfStepsPerS),
        )
      : null;
  const side = (list) => ({
    stepsPerS: roundTo(med(list, 'stepsPerS'), 4),
    medianStepS: roundTo(med(list, 'medianStepS'), 3),
    firstStepS: roundTo(med(list, 'firstStepS'), 2),
    hfStepsPerS: roundTo(med(list, 'hfStepsPerS'), 4),
    wallS: roundTo(med(list, 'wallS'), 1),
    beforeTrainS: roundTo(med(list, 'beforeTrainS'), 1),
    trainLoopS: roundTo(med(list, 'trainLoopS'), 1),
    afterTrainS: roundTo(med(list, 'afterTrainS'), 1),
    cpuStepsPerS: roundTo(med(list, 'cpuStepsPerS'), 4),
    trainerCpuShare: roundTo(med(list, 'trainerCpuShare'), 3),
    nodeCpuMsPerStep: list[0].nodeCpuMsPerStep === null ? null : roundTo(med(list, 'nodeCpuMsPerStep'), 2),
    samples: list.map((s) =>
      Object.fromEntries(Object.entries(s).map(([k, v]) => [k, typeof v === 'number' ? roundTo(v, 4) : v])),
    ),
  });
  return {
    algo,
    wrapper: side(w),
    direct: side(d),
    ratio: roundTo(ratio, 4),
    ratioOfMedians: roundTo(med(w, 'stepsPerS') / med(d, 'stepsPerS'), 4),
    perRoundRatios: perRound.map((x) => roundTo(x, 4)),
    slowdownPct: roundTo((1 - ratio) * 100, 2),
    cpuRatio: roundTo(
      pairedRatio(
        w.map((s) => s.cpuStepsPerS),
        d.map((s) => s.cpuStepsPerS),
      ),
      4,
    ),
    cpuWithNodeRatio: roundTo(cpuWithNodeRatio, 4),
    cpuSlowdownBoundPct: roundTo((1 - cpuWithNodeRatio) * 100, 2),
    perRoundSpreadPct: roundTo(((Math.max(...perRound) - Math.min(...perRound)) / ratio) * 100, 1),
    hfRatio: hfRatio === null ? null : roundTo(hfRatio, 4),
    wallRatio: roundTo(
      pairedRatio(
        w.map((s) => s.wallS),
        d.map((s) => s.wallS),
      ),
      3,
    ),
    wallExtraS: roundTo(median(w.map((s, i) => s.wallS - d[i].wallS)), 1),
    beforeTrainExtraS: roundTo(median(w.map((s, i) => s.beforeTrainS - d[i].beforeTrainS)), 2),
    afterTrainExtraS: roundTo(median(w.map((s, i) => s.afterTrainS - d[i].afterTrainS)), 2),
    rows: rounds[0].wrapper.clock.train_rows,
    trainableParams: rounds[0].wrapper.clock.trainable_params,
    callbacks: { wrapper: rounds[0].wrapper.clock.callbacks, direct: rounds[0].direct.clock.callbacks },
  };
}

async function main() {
  const args = parseBenchArgs();
  const size = args.quick ? SIZES.quick : SIZES.full;
  const loadAtStart = os.loadavg().map((x) => roundTo(x, 2));
  const dir = makeTempDir('train-overhead');
  const env = baseEnv();
  try {
    const projects = {};
    let store;
    for (const algo of ALGOS) {
      const project = path.join(dir, algo);
      fs.mkdirSync(path.join(project, '.massgen-rl'), { recursive: true });
      fs.writeFileSync(path.join(project, 'massgen-rl.yaml'), projectYaml(algo));
      store = buildTrainStore(path.join(project, '.massgen-rl', 'store.sqlite'), {
        tasks: size.tasks,
        rolloutsPerTask: size.rolloutsPerTask,
      });
      projects[algo] = project;
    }
    progress(
      `train-overhead: a store of ${store.rollouts} rollouts (${store.spans} spans, ${store.tasks} tasks) per algorithm; ${size.rounds} round(s) of ${size.steps} steps per side and algorithm`,
    );

    // Untimed: one short wrapper run per algorithm builds the dataset, writes the trainer.yaml the direct side
    // reads (max_steps raised to the timed value) and warms the page cache and bytecode caches.
    const direct = {};
    for (const algo of ALGOS) {
      const warm = await wrapperRun(projects[algo], algo, size.warmupSteps, env);
      const cfg = { ...warm.cfg, max_steps: size.steps };
      const file = path.join(projects[algo], 'direct.yaml');
      fs.writeFileSync(file, stringifyYaml(cfg));
      direct[algo] = { file, python: warm.python, cfg };
      progress(
        `warm-up ${algo}: ${warm.clock.train_rows} rows, ${warm.run.wallS.toFixed(1)} s (python ${warm.python})`,
      );
    }

    const rounds = Object.fromEntries(ALGOS.map((a) => [a, []]));
    for (let round = 0; round < size.rounds; round++) {
      for (const algo of ALGOS) {
        const { file, python, cfg } = direct[algo];
        const sides = {
          wrapper: () => wrapperRun(projects[algo], algo, size.steps, env),
          direct: async () => ({ ...(await directRun(projects[algo], algo, size.steps, env, python, file)), cfg }),
        };
        const order = round % 2 === 0 ? ['wrapper', 'direct'] : ['direct', 'wrapper'];
        const got = {};
        for (const side of order) {
          got[side] = await sides[side]();
          progress(`round ${round + 1}/${size.rounds} ${algo.padEnd(4)} ${side.padEnd(7)} ${fmt(got[side].sample)}`);
        }
        checkSame(algo, got.wrapper, got.direct);
        rounds[algo].push(got);
      }
    }

    const results = ALGOS.map((algo) => summarize(algo, rounds[algo]));
    const cost = await protocolCost(dir, env, direct.sft.python);
    const target = args.quick ? undefined : TARGET_SLOWDOWN_PCT; // a quick run's 3 step intervals are too few to judge
    for (const r of results) {
      r.protocolCallbackShareOfStepPct = roundTo((cost.cpu_us_per_step / 1e6 / r.direct.medianStepS) * 100, 4);
      r.attributablePct = roundTo(
        ((cost.cpu_us_per_step / 1e6 + (r.wrapper.nodeCpuMsPerStep ?? 0) / 1e3) / r.direct.medianStepS) * 100,
        3,
      );
    }
    progress(
      `ProtocolCallback alone: ${cost.cpu_us_per_step} µs CPU per step (${results.map((r) => `${r.protocolCallbackShareOfStepPct} % of a ${r.algo} step`).join(', ')})`,
    );
    for (const r of results) {
      progress(
        `${r.algo}: wrapper ${r.wrapper.stepsPerS} steps/s, direct ${r.direct.stepsPerS} steps/s, ratio ${r.ratio} (per round ${r.perRoundRatios.join(', ')}; per trainer CPU s ${r.cpuRatio}; slowdown bound from trainer + Node CPU ${r.cpuSlowdownBoundPct} %); wall ${r.wrapper.wallS} s vs ${r.direct.wallS} s`,
      );
    }
    writeResult(args.out, {
      benchmark: 'train-overhead',
      quick: args.quick,
      loadAverage: { start: loadAtStart, end: os.loadavg().map((x) => roundTo(x, 2)) },
      params: {
        ...size,
        algos: ALGOS,
        model: 'builtin:smollm2-135m-instruct (float32, CPU)',
        projects: Object.fromEntries(ALGOS.map((a) => [a, projectYaml(a)])),
        threads: 'OMP_NUM_THREADS=1, MKL_NUM_THREADS=1 on both sides',
        store: { rollouts: store.rollouts, spans: store.spans, tasks: store.tasks },
        config: { sft: direct.sft.cfg, grpo: direct.grpo.cfg },
      },
      definitions: {
        wrapper:
          '`massgen-rl --json train --algo ALGO --all --max-steps N` (CLI process: config, dataset build from the store, preflight, trainer.yaml, bundled trainer with ProtocolCallback and JSON-lines events read by Node, checkpoint registration)',
        direct:
          "bench/lib/trl_direct.py: plain TRL SFTTrainer / GRPOTrainer with the values of the wrapper's trainer.yaml (same model folder, LoRA config, data.jsonl, TrainingArguments; checked equal), trainer.train() then save_model(); no Node, no protocol callback, no events; GRPO offline replay uses massgen_rl_training.grpo's load_groups and grpo_replay's replay_chunks/Replay/recorded_reward and the same GRPOTrainer subclass",
        stepsPerS:
          '(steps - 1) / (last - first optimizer step end), timed by the same TrainerCallback on both sides (bench/lib/train-overhead-site/sitecustomize.py); excludes loading and the first step',
        ratio:
          'median over rounds of wrapper steps/s / direct steps/s (runs of a round adjacent, order alternating); slowdownPct = (1 - ratio) x 100',
        hfStepsPerS: 'HF Trainer train_steps_per_second (max_steps / train_runtime over all of trainer.train())',
        cpuStepsPerS:
          'steps per CPU second of the trainer process over the same steps (time.process_time(); insensitive to other load taking the core); cpuRatio: paired median wrapper / direct',
        trainerCpuShare: 'trainer process CPU seconds / wall seconds over the steps (below 1: preempted by other work)',
        cpuSlowdownBoundPct:
          "noise-robust bound: 1 - paired median of direct CPU steps/s over wrapper steps per (trainer + Node CPU) second, in per cent (as if all of Node's CPU during the steps were taken from the trainer); catches extra work, not waiting",
        perRoundSpreadPct:
          '(max - min) / median of the per-round wall ratios: the noise the wall-clock ratio carries on this machine',
        attributablePct:
          '(ProtocolCallback CPU per step, measured outside training + wrapper Node CPU per step) / direct median step time, in per cent',
        nodeCpuMsPerStep:
          "CPU of the wrapper's Node process (the CLI, not its trainer child) during the steps, per step, from /proc polled every 250 ms",
        wallS:
          'whole command, spawn to exit; beforeTrainS / afterTrainS: spawn to train begin / train end to exit; *ExtraS: paired median wrapper - direct',
      },
      protocolCallback: {
        ...cost,
        what: 'bench/lib/protocol_callback_cost.py: on_step_end + on_log with a GRPO-sized logs dict, step events piped to the bench',
      },
      results,
      headline: results
        .flatMap((r) => [
          headline(`${r.algo}: wrapper steps/s`, r.wrapper.stepsPerS, 'steps/s'),
          headline(`${r.algo}: direct TRL steps/s`, r.direct.stepsPerS, 'steps/s'),
          headline(`${r.algo}: steps/s ratio wrapper / direct`, r.ratio, '×'),
          headline(`${r.algo}: wrapper slowdown`, r.slowdownPct, '%', target),
          headline(`${r.algo}: per-round ratio spread (noise)`, r.perRoundSpreadPct, '%'),
          headline(`${r.algo}: ratio per trainer CPU second`, r.cpuRatio, '×'),
          headline(`${r.algo}: slowdown bound, trainer + Node CPU`, r.cpuSlowdownBoundPct, '%', target),
          headline(`${r.algo}: wrapper Node CPU per step`, r.wrapper.nodeCpuMsPerStep, 'ms'),
          headline(`${r.algo}: wrapper work per step (callback + Node CPU)`, r.attributablePct, '% of a step'),
          headline(`${r.algo}: wall time wrapper (whole command)`, r.wrapper.wallS, 's'),
          headline(`${r.algo}: wall time direct (whole command)`, r.direct.wallS, 's'),
        ])
        .concat([headline('ProtocolCallback CPU per step (outside training)', cost.cpu_us_per_step, 'µs')]),
    });
  } finally {
    removeTempDir(dir);
  }
}

main().catch((err) => {
  console.error(err.stack ?? err.message);
  process.exitCode = 1;
});
