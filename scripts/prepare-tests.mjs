// Prepares what the real-model tier needs, once, then reuses it: the trainer venv and the default model
// (massgen-rl doctor --fix, with progress), ruff in that venv for the lint suite, the real MassGen in its own
// venv, and Phoenix with the OpenTelemetry SDK in theirs. Run by `npm test` and `npm run test:real-model`; alone, it exits 1 when the environment could not be
// prepared.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ruffSpec, trainerVenv } from './lint.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));

/** True when the trainer venv and the default model are ready; a missing MassGen is only reported. */
export function prepareTestEnvironment(env = process.env) {
  const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { stdio: 'inherit', env, cwd: root, ...opts }).status ?? 1;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'massgen-rl-prepare-'));
  try {
    console.log('== environment: massgen-rl doctor --fix (creates the trainer venv and the default model once) ==');
    if (run(process.execPath, [path.join(root, 'bin/massgen-rl.js'), 'doctor', '--fix'], { cwd: work }) !== 0) {
      console.error('the environment could not be prepared; see above');
      return false;
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  // ruff for the lint suite: a development tool, so the trainer venv gets it here and not from doctor.
  const spec = ruffSpec();
  const venvBin = path.join(trainerVenv(env), 'bin');
  const version = spawnSync(path.join(venvBin, 'ruff'), ['--version'], { encoding: 'utf8' }).stdout?.trim();
  if (version !== spec.replace('==', ' ')) {
    console.log(`\n== environment: ${spec} in the trainer venv, for the lint suite ==`);
    const pip = ['-m', 'pip', 'install', '--disable-pip-version-check', '--progress-bar', 'off', spec];
    if (run(path.join(venvBin, 'python'), pip) !== 0)
      console.log('ruff could not be installed (see above): the lint suite fails');
  }
  // The real MassGen (from PyPI, in its own venv under the cache) for the tests that run it; once, then reused.
  console.log('\n== environment: massgen 0.1.97 for the tests that run the real MassGen ==');
  if (run('sh', [path.join(root, 'scripts', 'setup-massgen-venv.sh')]) !== 0) {
    console.log('massgen could not be installed (see above): the tests that need it skip locally and fail in CI');
  }
  // Arize Phoenix and the Python OpenTelemetry SDK for the tests that send to and receive from them for real.
  console.log('\n== environment: Arize Phoenix and the OpenTelemetry SDK for the OpenTelemetry tests ==');
  if (run('sh', [path.join(root, 'scripts', 'setup-telemetry-venv.sh')]) !== 0) {
    console.log('they could not be installed (see above): the tests that need them skip locally and fail in CI');
  }
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exit(prepareTestEnvironment({ ...process.env, HF_HUB_OFFLINE: '1', NO_COLOR: '1' }) ? 0 : 1);
}
