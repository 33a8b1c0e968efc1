// One shared adapter or one per role? From one collect of the embedded default team (the bundled model, three agents
// answering independently) on the built-in suites' train split, one cycle of each arm on the same traces:
// (a) one shared adapter trained on every agent's calls (`train weights` without `roles:`, the default recipe);
// (b) the same config with `roles:`, each role its own adapter line and the same recipe on only its own calls.
// Each candidate against the base set on the eval split (same tasks and seeds; the base's results are measured
// once and reused): success and mean reward with paired-bootstrap 95 % CIs; each role's own effect (the base plus
// only that role's new adapter, leave-one-in, against the base); and (b) against (a) directly, on the same
// stored results. Targets: (b) ≥ (a), and at least one role's own effect with its CI above 0.
// ROLES_SPLIT names the roles (default `answerer=agent_a;checkers=agent_b,agent_c`: the greedy agent whose answer
// the team gives, and the two sampling agents whose agreement can overrule it). ROLES_PER_SUITE, ROLES_SAMPLES,
// ROLES_EPOCHS, ROLES_SEEDS and ROLES_CONCURRENCY override the sizes; ROLES_SUITES the suites (comma-separated).
import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_RECIPE } from '../dist/config/defaults.js';
import { loadConfig } from '../dist/config/load.js';
import { collect } from '../dist/pipeline/collect/collect.js';
import { evaluate } from '../dist/pipeline/evaluate/evaluate.js';
import { evaluateRoleCredit } from '../dist/pipeline/evaluate/roles.js';
import { trainRoles } from '../dist/pipeline/train/roles.js';
import { train } from '../dist/pipeline/train/train.js';
import { roleScopes } from '../dist/resources/role-variants.js';
import { withRuntime } from '../dist/runtime/runtime.js';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { collectRecord, cpuSeconds } from './lib/efficacy-report.mjs';
import { headline, progress, writeResult } from './lib/report.mjs';
import { comparison, rolesHeadlines, summaryLines, verdict } from './lib/roles-report.mjs';
import { roundTo } from './lib/stats.mjs';
import { makeTempDir, removeTempDir } from './lib/temp-dir.mjs';

const args = parseBenchArgs();
const SIZES = {
  full: {
    suites: ['arithmetic', 'unit_conversion', 'string_transform', 'multi_step'],
    perSuite: 80,
    evalFraction: 0.3,
    samples: DEFAULT_RECIPE.samples_per_turn,
    epochs: DEFAULT_RECIPE.num_train_epochs,
    seeds: 1,
  },
  quick: {
    suites: ['arithmetic', 'unit_conversion'],
    perSuite: 6,
    evalFraction: 0.3,
    samples: 2,
    epochs: 1,
    seeds: 1,
  },
};
const sz = { ...SIZES[args.quick ? 'quick' : 'full'] };
const env = process.env;
if (env.ROLES_SUITES) sz.suites = env.ROLES_SUITES.split(',').filter(Boolean);
if (env.ROLES_PER_SUITE) sz.perSuite = Number(env.ROLES_PER_SUITE);
if (env.ROLES_SAMPLES) sz.samples = Number(env.ROLES_SAMPLES);
if (env.ROLES_EPOCHS) sz.epochs = Number(env.ROLES_EPOCHS);
if (env.ROLES_SEEDS) sz.seeds = Number(env.ROLES_SEEDS);
const CONCURRENCY = Number(env.ROLES_CONCURRENCY ?? 2);
const ROLES = parseRoles(env.ROLES_SPLIT ?? 'answerer=agent_a;checkers=agent_b,agent_c');

/** `name=agent,agent;name=agent` → [[name, [agents]]]. */
function parseRoles(spec) {
  return spec.split(';').map((part) => {
    const [name, agents] = part.split('=');
    if (!name || !agents) throw new Error(`ROLES_SPLIT: "${part}" is not name=agent[,agent]`);
    return [name.trim(), agents.split(',').map((a) => a.trim())];
  });
}

// The one budget both arms train with: the default recipe's data selection and trainer settings. By epochs, not
// max_steps: a max_steps would give each role the steps of the whole team.
const trainerKeys = [
  `select: ${DEFAULT_RECIPE.select}`,
  `learning_rate: ${DEFAULT_RECIPE.learning_rate}`,
  `num_train_epochs: ${sz.epochs}`,
  'per_device_train_batch_size: 4',
  'seed: 1',
].join(', ');

function yaml(withRoles) {
  // No `agents`: the embedded default team; without train.algo it gets the default recipe (sft).
  const sources = sz.suites.map((s) => `{ suite: ${s}, n: ${sz.perSuite} }`).join(', ');
  return [
    'tasks:',
    `  sources: [${sources}]`,
    `  split: { eval_fraction: ${sz.evalFraction} }`,
    'rewards: { weights: { exact: 1, numeric: 1 } }',
    `collect: { split: train, concurrency: ${CONCURRENCY}, samples_per_turn: ${sz.samples} }`,
    `train: { sft: { ${trainerKeys} }, gates: { min_examples: 1, min_categories: 1, min_clean_share: 0 } }`,
    ...(withRoles
      ? [
          'roles:',
          ...ROLES.map(
            ([name, agents]) =>
              `  ${name}: { agents: [${agents.join(', ')}], weights: { lora: ${name} }, `
              + `recipe: { algo: sft, ${trainerKeys} } }`,
          ),
        ]
      : []),
    `eval: { split: eval, seeds: ${sz.seeds}, metric: success_rate, report: false }`,
  ].join('\n');
}

const results = {
  benchmark: 'roles',
  quick: args.quick,
  sizes: sz,
  concurrency: CONCURRENCY,
  roles: Object.fromEntries(ROLES),
  recipe: trainerKeys,
  base: null,
  arms: { a: null, b: null },
  bVsA: null,
  verdict: null,
};
const jsonFile = args.out ?? path.join('bench-results', 'roles.json');
// Written after every step, so a run stopped part-way still leaves what it measured.
function save() {
  results.verdict = verdict(results);
  results.headline = rolesHeadlines(results, headline);
  writeResult(jsonFile, results);
}

const seconds = (t0) => roundTo((Date.now() - t0) / 1000, 1);
const root = makeTempDir('roles');
const useConfig = (withRoles) => fs.writeFileSync(path.join(root, 'massgen-rl.yaml'), yaml(withRoles));
const load = () => loadConfig({ cwd: root });
const onStage = (label) => (m) => progress(`${label}: ${m}`);
try {
  // One project dir, so both arms read the same store: arm (a)'s config is arm (b)'s without `roles:`.
  useConfig(false);
  progress(`collect: the default team on the train split (${sz.suites.join(', ')}, ${sz.perSuite} tasks each)`);
  let t0 = Date.now(),
    c0 = cpuSeconds();
  const col = await withRuntime(load(), (rt) =>
    collect(rt, { onProgress: (p) => progress(`  ${p.done}/${p.total} done, ${p.failed} failed`) }),
  );
  const baseVersion = col.resourceSet.version;
  results.base = {
    set: baseVersion,
    collect: collectRecord(col, t0, c0),
  };
  save();

  // Both arms train before any evaluation, on every stored trace (`all`), so each reads exactly the collect's.
  progress('(a) one shared adapter on every agent’s calls');
  t0 = Date.now();
  c0 = cpuSeconds();
  const a = await withRuntime(load(), (rt) => train(rt, { all: true, onStage: onStage('  (a)') }));
  results.arms.a = {
    candidateSet: a.candidateSet?.version ?? null,
    train: {
      examples: a.dataset.rows,
      steps: a.steps,
      trainerSeconds: roundTo(a.durationMs / 1000, 1),
      wallSeconds: seconds(t0),
      cpuSeconds: roundTo(cpuSeconds() - c0, 1),
    },
    vsBase: null,
  };
  save();

  useConfig(true);
  progress(`(b) per-role adapters: ${ROLES.map(([n, ag]) => `${n} (${ag.join(', ')})`).join('; ')}`);
  t0 = Date.now();
  c0 = cpuSeconds();
  const b = await withRuntime(load(), (rt) => trainRoles(rt, { all: true, onStage: onStage('  (b)') }));
  const roles = b.roles.map((r) => ({
    role: r.role,
    status: r.status,
    reason: r.reason ?? null,
    line: r.line,
    examples: r.result?.dataset.rows ?? null,
    steps: r.result?.steps ?? null,
    trainSeconds: r.result ? roundTo(r.result.durationMs / 1000, 1) : null,
    ownEffect: null,
    ownSet: null,
    gatesPassed: null,
  }));
  const trainedRoles = roles.filter((r) => r.status === 'trained');
  results.arms.b = {
    candidateSet: b.candidateSet?.version ?? null,
    train: {
      examples: trainedRoles.reduce((n, r) => n + r.examples, 0),
      steps: trainedRoles.reduce((n, r) => n + r.steps, 0),
      trainerSeconds: roundTo(
        trainedRoles.reduce((n, r) => n + r.trainSeconds, 0),
        1,
      ),
      wallSeconds: seconds(t0),
      cpuSeconds: roundTo(cpuSeconds() - c0, 1),
    },
    roles,
    vsBase: null,
  };
  save();

  // Every evaluation under (b)'s config: `roles:` changes no orchestration, so stored results are reused across.
  const label = (name) => (p) => progress(`  ${name} ${p.done}/${p.total} done`);
  if (a.candidateSet) {
    progress(`eval (a): set v${a.candidateSet.version} against the base set v${baseVersion}`);
    t0 = Date.now();
    const ev = await withRuntime(load(), (rt) =>
      evaluate(rt, {
        candidate: `set:${a.candidateSet.version}`,
        baseline: `set:${baseVersion}`,
        onStage: onStage('  (a)'),
        onProgress: label('(a)'),
      }),
    );
    results.arms.a.vsBase = comparison(ev);
    results.arms.a.evalSeconds = seconds(t0);
    save();
  }
  if (b.candidateSet) {
    progress(`eval (b): set v${b.candidateSet.version} and each role alone against the base set v${baseVersion}`);
    t0 = Date.now();
    const credit = await withRuntime(load(), (rt) =>
      evaluateRoleCredit(rt, {
        candidate: `set:${b.candidateSet.version}`,
        baseline: `set:${baseVersion}`,
        roles: roleScopes(rt.config.roles),
        onStage: onStage('  (b)'),
        onProgress: label('(b)'),
      }),
    );
    results.arms.b.vsBase = comparison(credit.team);
    for (const c of credit.roles) {
      const r = roles.find((x) => x.role === c.role);
      if (!r || !c.summary) continue;
      r.ownSet = c.set;
      r.ownEffect = comparison(c.summary);
      r.gatesPassed = c.passed;
    }
    results.arms.b.promotable = credit.promotable
      ? { set: credit.promotable.set, roles: credit.promotable.roles }
      : null;
    results.arms.b.evalSeconds = seconds(t0);
    save();
  }
  if (a.candidateSet && b.candidateSet) {
    progress(`(b) set v${b.candidateSet.version} against (a) set v${a.candidateSet.version}, from the stored results`);
    const ev = await withRuntime(load(), (rt) =>
      evaluate(rt, { candidate: `set:${b.candidateSet.version}`, baseline: `set:${a.candidateSet.version}` }),
    );
    results.bVsA = comparison(ev);
    save();
  }
} finally {
  removeTempDir(root);
}
results.finished = true;
save();
for (const line of summaryLines(results)) progress(line);
progress(results.verdict.text);
progress(`results: ${jsonFile}`);
