// Learning without references: does a cycle that never reads a reference make the team more correct? One collect of
// the embedded default team (the quickstart's suites and sizes) is shared by (a) the default cycle's training, DPO on
// correctness pairs the references verified, and (b) the same traces re-scored with rewards.references off in a copy
// of the project, where agreement with the majority verifies and the pairs follow it. Each candidate against the
// base on the eval split and on bench/transfer, judged by the references ((b) never trained on them), and each arm's own
// gates as its loop would have decided (reference_check among them). Then the reward audit of every label-free
// family against the references, on the same collect.
// (c): label-free nights on traffic captured through the gateway, each night's production against the base as the
// references judge it: an openai-SDK agent that asks each train task a few times (lib/label-free-gateway.mjs), and
// the real MassGen on the team's exported config (lib/label-free-massgen.mjs).
// LABEL_FREE_PER_SUITE (60) tasks per suite; LABEL_FREE_DIR=path keeps the projects there; LABEL_FREE_TRANSFER=0
// skips the transfer set; LABEL_FREE_ARMS (references,gateway,massgen) picks arms: references is (a), (b) and the
// audit; LABEL_FREE_NIGHTS (2) nights for each (c) arm; LABEL_FREE_SAMPLES (4) asks of a task by the SDK agent;
// LABEL_FREE_MASSGEN_TASKS (30) MassGen runs a night.
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../dist/config/load.js';
import { collect } from '../dist/pipeline/collect/collect.js';
import { evaluate } from '../dist/pipeline/evaluate/evaluate.js';
import { train } from '../dist/pipeline/train/train.js';
import { auditRewards, recomputeRewards } from '../dist/pipeline/utilities/rewards.js';
import { withRuntime } from '../dist/runtime/runtime.js';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { comparison, datasetCounts, onTransfer, TRANSFER_TASKS } from './lib/cycles.mjs';
import { collectRecord, cpuSeconds } from './lib/efficacy-report.mjs';
import { gatewayArm } from './lib/label-free-gateway.mjs';
import { MASSGEN_ARM, massgenArm, massgenInstalled } from './lib/label-free-massgen.mjs';
import { labelFreeHeadlines, labelFreeLines } from './lib/label-free-report.mjs';
import { progress, writeResult } from './lib/report.mjs';
import { roundTo } from './lib/stats.mjs';
import { makeTempDir, removeTempDir } from './lib/temp-dir.mjs';

const args = parseBenchArgs();
const SUITES = ['arithmetic', 'unit_conversion', 'string_transform', 'multi_step'];
const PER_SUITE = Number(process.env.LABEL_FREE_PER_SUITE ?? (args.quick ? 8 : 60));
const TRANSFER = process.env.LABEL_FREE_TRANSFER !== '0' && !args.quick;
const NIGHTS = Number(process.env.LABEL_FREE_NIGHTS ?? (args.quick ? 1 : 2));
const SAMPLES = Number(process.env.LABEL_FREE_SAMPLES ?? 4);
const MASSGEN_TASKS = Number(process.env.LABEL_FREE_MASSGEN_TASKS ?? (args.quick ? 2 : 30));
const ARMS = new Set((process.env.LABEL_FREE_ARMS ?? 'references,gateway,massgen').split(','));
const SIZES = [
  `tasks.sources=${JSON.stringify(SUITES.map((suite) => ({ suite, n: PER_SUITE })))}`,
  'tasks.split.eval_fraction=0.3',
  'eval.report=false',
  ...(args.quick ? ['collect.samples_per_turn=2', 'train.dpo.num_train_epochs=1', 'train.gates.min_examples=1'] : []),
];
const OFF = ['rewards.references=off'];
// The audit's weights: the verifying families beside every label-free one, so each is scored on the same answers.
const AUDITED = 'rewards.weights={exact: 1, numeric: 1, agreement: 0.2, peer_vote: 0.2, coordination: 0.2}';

const results = {
  benchmark: 'label-free',
  quick: args.quick,
  perSuite: PER_SUITE,
  suites: SUITES,
  transfer: TRANSFER ? path.relative(process.cwd(), TRANSFER_TASKS) : null,
  collect: null,
  arms: [],
  audit: null,
  gateway: null,
  massgen: null,
};
const jsonFile = args.out ?? path.join('bench-results', 'label-free.json');
const save = () => {
  results.headline = labelFreeHeadlines(results);
  writeResult(jsonFile, results);
};

const KEEP = process.env.LABEL_FREE_DIR ? path.resolve(process.env.LABEL_FREE_DIR) : null;
if (KEEP && fs.existsSync(KEEP) && fs.readdirSync(KEEP).length) throw new Error(`LABEL_FREE_DIR ${KEEP} is not empty`);
const root = KEEP ? (fs.mkdirSync(KEEP, { recursive: true }), KEEP) : makeTempDir('label-free');
const dirs = {
  references: path.join(root, 'references'),
  labelFree: path.join(root, 'label-free'),
  gateway: path.join(root, 'gateway'),
  massgen: path.join(root, 'massgen'),
};
// the agent's replies are free-form: they agree on their last line's last number
const CAPTURED = [...OFF, 'collect.source=gateway', 'gateway.holdout=0', 'rewards.agreement.compare=last_number'];
const loader =
  (dir, extra = []) =>
  () =>
    loadConfig({ cwd: dir, overrides: [...SIZES, ...extra] });

/** One arm, or what stopped it (a label-free arm with no majority anywhere has nothing to train on). */
async function tryArm(name, dir, trainWith) {
  try {
    return await arm(name, dir, trainWith);
  } catch (err) {
    progress(`${name}: ${err.message}`);
    return { arm: name, error: err.message };
  }
}

/** Trains the project's default recipe on every stored trace and measures the candidate as the references judge it. */
async function arm(name, dir, trainWith) {
  const t0 = Date.now(),
    c0 = cpuSeconds();
  const note = (m) => progress(`  ${name}: ${m}`);
  const tr = await withRuntime(loader(dir, trainWith)(), (rt) =>
    train(rt, {
      all: true,
      onStage: note,
      onProgress: (p) => p.step % 10 === 0 && note(`step ${p.step}/${p.totalSteps}`),
    }),
  );
  const candidate = tr.candidateSet.version;
  // What this arm's own loop would have decided: its gates under its own reward config.
  const own = await withRuntime(loader(dir, trainWith)(), (rt) =>
    evaluate(rt, { candidate: `set:${candidate}`, baseline: 'set:1', trigger: 'loop', onStage: note }),
  );
  // The truth: success by the references, which the label-free arm never trained on.
  const judged = trainWith.length
    ? await withRuntime(loader(dir)(), (rt) => evaluate(rt, { candidate: `set:${candidate}`, baseline: 'set:1' }))
    : own;
  const entry = {
    arm: name,
    examples: tr.dataset.rows,
    dataset: datasetCounts(tr.dataset.dir),
    steps: tr.steps,
    candidate,
    vsBase: comparison(judged),
    gates: own.gates.map((g) => ({ gate: g.gate, passed: g.passed, detail: g.detail })),
    passed: own.passed,
    wallSeconds: roundTo((Date.now() - t0) / 1000, 1),
    cpuSeconds: roundTo(cpuSeconds() - c0, 1),
  };
  if (TRANSFER) {
    note(`transfer: set v${candidate} against the base on ${results.transfer}`);
    entry.transfer = await onTransfer(loader(dir), 1, candidate, `  ${name} transfer`);
  }
  return entry;
}

try {
  if (ARMS.has('references')) await referencesAndLabelFree();
  if (ARMS.has('gateway') && NIGHTS > 0) {
    fs.mkdirSync(dirs.gateway, { recursive: true });
    progress(`gateway: ${NIGHTS} label-free night(s) on an openai-SDK agent's traffic, ${SAMPLES} asks a task`);
    results.gateway = await gatewayArm({
      load: loader(dirs.gateway, CAPTURED),
      judge: loader(dirs.gateway),
      nights: NIGHTS,
      samples: SAMPLES,
      transfer: TRANSFER,
    });
    save();
  }
  if (ARMS.has('massgen') && NIGHTS > 0) {
    if (!massgenInstalled()) throw new Error('the massgen arm needs the MassGen venv: scripts/setup-massgen-venv.sh');
    fs.mkdirSync(dirs.massgen, { recursive: true });
    progress(`massgen: ${NIGHTS} label-free night(s) of real MassGen through the gateway, ${MASSGEN_TASKS} runs each`);
    results.massgen = await massgenArm({
      load: loader(dirs.massgen, MASSGEN_ARM),
      judge: loader(dirs.massgen),
      nights: NIGHTS,
      perNight: MASSGEN_TASKS,
      transfer: TRANSFER,
      work: path.join(root, 'massgen-runs'),
    });
    save();
  }
} finally {
  if (!KEEP) removeTempDir(root);
}
results.finished = true;
save();
for (const line of labelFreeLines(results)) progress(line);
progress(`results: ${jsonFile}`);

/** Arms (a) and (b) on one collect, then the reward audit. */
async function referencesAndLabelFree() {
  fs.mkdirSync(dirs.references, { recursive: true });
  progress(`collect: the default team on the train split (${SUITES.join(', ')}, ${PER_SUITE} tasks each)`);
  const t0 = Date.now(),
    c0 = cpuSeconds();
  const col = await withRuntime(loader(dirs.references)(), (rt) =>
    collect(rt, { onProgress: (p) => progress(`  ${p.done}/${p.total} done`) }),
  );
  results.collect = collectRecord(col, t0, c0);
  save();
  results.arms.push(await tryArm('references', dirs.references, []));
  save();
  // (b)'s project: a copy after (a), so the base's results under the references are reused; its collected traces
  // re-scored without them.
  fs.cpSync(dirs.references, dirs.labelFree, { recursive: true });
  const rescored = await withRuntime(loader(dirs.labelFree, OFF)(), (rt) =>
    recomputeRewards(rt, { source: 'collect' }),
  );
  progress(`label-free: ${rescored.rollouts} collected rollouts re-scored with rewards.references off`);
  results.arms.push(await tryArm('label-free', dirs.labelFree, OFF));
  save();

  // Every label-free family against the references, on every rollout of (a)'s project (re-scored with them all
  // weighted: its results are measured already, and no training follows).
  results.audit = await withRuntime(loader(dirs.references, [AUDITED])(), async (rt) => {
    await recomputeRewards(rt);
    return auditRewards(rt);
  });
}
