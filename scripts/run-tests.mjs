// Runs every suite (lint: prettier, eslint, ruff check and ruff format, one count each; vitest: the tiers of
// vitest.config.ts in two runs, the real-model tier on its own; pytest in the trainer venv beside them) and ends with
// one line: "N passed, N failed". First it prepares the trainer venv, the default model and the real MassGen the
// real-model tier runs (scripts/prepare-tests.mjs).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheDir } from '../dist/config/paths.js';
import { lint } from './lint.mjs';
import { prepareTestEnvironment } from './prepare-tests.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'massgen-rl-tests-'));
// OpenMP's threads (torch's in every trainer) sleep when they wait rather than spin: pytest runs beside the real-model
// tier, and a spinning thread takes the core the other side's work needs.
const env = { OMP_WAIT_POLICY: 'PASSIVE', ...process.env, HF_HUB_OFFLINE: '1', NO_COLOR: '1' };
const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { stdio: 'inherit', env, cwd: root, ...opts }).status ?? 1;

if (!(await prepareTestEnvironment(env))) {
  fs.rmSync(work, { recursive: true, force: true });
  console.log('0 passed, 1 failed');
  process.exit(1);
}

const totals = { passed: 0, failed: 0, skipped: 0 };

console.log('\n== lint (prettier, eslint, ruff) ==');
const lintCounts = lint({ env });
tally('lint', lintCounts.failed ? 1 : 0, () => lintCounts);

// The tiers without the model (python-env: the venv's Python and MassGen, no model) wait on child processes and
// PostgreSQL more than they compute: three workers even on two cores (measured on two before python-env joined them:
// 612 s with one, 372 s with two, 291 s with three, 305 s with four). The real-model tier decodes on every core:
// vitest's default, cores − 1 workers (one file at a time on two cores).
vitestTier(
  'unit, integration, e2e, python-env',
  ['unit', 'integration', 'e2e', 'python-env'],
  Math.max(3, os.availableParallelism() - 1),
);

// pytest runs beside the real-model tier, its output kept until the tier ends: either alone leaves part of two cores
// idle (measured here: pytest 580 s for 12 CPU minutes, the real-model tier 1228 s for 30), while the tiers before
// keep both busy (607 s for 18).
const pytest = startPytest();
vitestTier('real-model', ['real-model']);

console.log('\n== pytest (python/; ran beside the real-model tier) ==');
const pytestCode = await pytest.done;
process.stdout.write(fs.readFileSync(pytest.log, 'utf8'));
tally('pytest', pytestCode, () => {
  const suite = /<testsuite\b[^>]*>/.exec(fs.readFileSync(pytest.junit, 'utf8'))[0];
  const attr = (name) => Number(new RegExp(`\\b${name}="(\\d+)"`).exec(suite)?.[1] ?? 0);
  const failed = attr('failures') + attr('errors');
  return { passed: attr('tests') - failed - attr('skipped'), failed, skipped: attr('skipped') };
});

fs.rmSync(work, { recursive: true, force: true });
console.log(`\n${totals.passed} passed, ${totals.failed} failed${totals.skipped ? `, ${totals.skipped} skipped` : ''}`);
process.exit(totals.failed ? 1 : 0);

/**
 * pytest in the trainer venv, in the background (its own summary line gives its time): its exit code (done), its
 * output (log) and its JUnit XML.
 */
function startPytest() {
  const junit = path.join(work, 'pytest.xml');
  const log = path.join(work, 'pytest.log');
  const python = path.join(process.env.MASSGEN_RL_VENV ?? path.join(cacheDir(env), 'venv'), 'bin', 'python');
  const fd = fs.openSync(log, 'w');
  const child = spawn(python, ['-m', 'pytest', '-q', '--durations=15', `--junitxml=${junit}`], {
    cwd: path.join(root, 'python'),
    stdio: ['ignore', fd, fd],
    env: {
      ...env,
      MASSGEN_RL_DEFAULT_MODEL_DIR: path.join(cacheDir(env), 'models', 'smollm2-135m-instruct'),
    },
  });
  const done = new Promise((resolve) => {
    const end = (code) => {
      fs.closeSync(fd);
      resolve(code);
    };
    child.on('error', () => end(1));
    child.on('close', (code) => end(code ?? 1));
  });
  return { done, log, junit };
}

/** One vitest run over these tiers (projects), with this many workers or vitest's default, counted as one suite. */
function vitestTier(name, projects, workers) {
  console.log(`\n== vitest (${name}${workers ? `; ${workers} workers` : ''}) ==`);
  const json = path.join(work, `vitest-${projects[0]}.json`);
  const tiers = projects.flatMap((p) => ['--project', p]);
  const args = [
    'run',
    ...tiers,
    ...(workers ? [`--maxWorkers=${workers}`] : []),
    '--reporter=default',
    '--reporter=json',
    `--outputFile=${json}`,
  ];
  const started = Date.now();
  const code = run(path.join(root, 'node_modules/.bin/vitest'), args);
  console.log(`vitest ${name}: ${Math.round((Date.now() - started) / 1000)} s`);
  tally(`vitest ${name}`, code, () => {
    const r = JSON.parse(fs.readFileSync(json, 'utf8'));
    return { passed: r.numPassedTests, failed: r.numFailedTests, skipped: r.numPendingTests + r.numTodoTests };
  });
}

/** Adds a suite's counts; a suite that crashed or reported nothing counts as one failure. */
function tally(name, code, read) {
  let counts;
  try {
    counts = read();
  } catch (err) {
    console.error(`${name}: no results (${err.message})`);
  }
  if (!counts || counts.passed + counts.failed === 0) counts = { passed: 0, failed: 1, skipped: 0 };
  if (code !== 0 && counts.failed === 0) counts.failed = 1;
  totals.passed += counts.passed;
  totals.failed += counts.failed;
  totals.skipped += counts.skipped;
}
