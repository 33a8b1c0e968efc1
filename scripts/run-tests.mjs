// Runs every suite (vitest, then pytest in the trainer venv) and ends with one line: "N passed, N failed".
// First it makes sure the trainer venv and the default model exist (massgen-rl doctor --fix), with progress,
// and the real MassGen the interop tests run.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheDir } from '../dist/config/paths.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'massgen-rl-tests-'));
const env = { ...process.env, HF_HUB_OFFLINE: '1', NO_COLOR: '1' };
const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { stdio: 'inherit', env, cwd: root, ...opts }).status ?? 1;

console.log('== environment: massgen-rl doctor --fix (creates the trainer venv and the default model once) ==');
if (run(process.execPath, [path.join(root, 'bin/massgen-rl.js'), 'doctor', '--fix'], { cwd: work }) !== 0) {
  console.error('the environment could not be prepared; see above');
  console.log('0 passed, 1 failed');
  process.exit(1);
}

// The real MassGen (from PyPI, in its own venv under the cache) for the tests that run it; once, then reused.
console.log('\n== environment: massgen 0.1.97 for the tests that run the real MassGen ==');
if (run('sh', [path.join(root, 'scripts', 'setup-massgen-venv.sh')]) !== 0) console.log('massgen could not be installed (see above): the tests that need it skip locally and fail in CI');

const totals = { passed: 0, failed: 0, skipped: 0 };

console.log('\n== vitest ==');
const vitestJson = path.join(work, 'vitest.json');
const vitestCode = run(path.join(root, 'node_modules/.bin/vitest'), ['run', '--reporter=default', '--reporter=json', `--outputFile=${vitestJson}`]);
tally('vitest', vitestCode, () => {
  const r = JSON.parse(fs.readFileSync(vitestJson, 'utf8'));
  return { passed: r.numPassedTests, failed: r.numFailedTests, skipped: r.numPendingTests + r.numTodoTests };
});

console.log('\n== pytest (trainers/) ==');
const junit = path.join(work, 'pytest.xml');
const python = path.join(process.env.MASSGEN_RL_VENV ?? path.join(cacheDir(env), 'venv'), 'bin', 'python');
const pytestCode = run(python, ['-m', 'pytest', '-q', `--junitxml=${junit}`], {
  cwd: path.join(root, 'trainers'),
  env: { ...env, MASSGEN_RL_DEFAULT_MODEL_DIR: path.join(cacheDir(env), 'models', 'smollm2-135m-instruct') },
});
tally('pytest', pytestCode, () => {
  const suite = /<testsuite\b[^>]*>/.exec(fs.readFileSync(junit, 'utf8'))[0];
  const attr = (name) => Number(new RegExp(`\\b${name}="(\\d+)"`).exec(suite)?.[1] ?? 0);
  const failed = attr('failures') + attr('errors');
  return { passed: attr('tests') - failed - attr('skipped'), failed, skipped: attr('skipped') };
});

fs.rmSync(work, { recursive: true, force: true });
console.log(`\n${totals.passed} passed, ${totals.failed} failed${totals.skipped ? `, ${totals.skipped} skipped` : ''}`);
process.exit(totals.failed ? 1 : 0);

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
