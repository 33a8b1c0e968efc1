// Prepares what the real-model tier needs, once, then reuses it: the trainer venv and the default model
// (massgen-rl doctor --fix, with progress), ruff in that venv for the lint suite, the real MassGen in its own
// venv, and Phoenix with the OpenTelemetry SDK in theirs. The two outside venvs install (mostly downloads) while
// doctor builds llama.cpp (mostly compiling); their output follows doctor's. Run by `npm test` and
// `npm run test:real-model`; alone, it exits 1 when the environment could not be prepared.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ruffSpec, trainerVenv } from './lint.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));

/** True when the trainer venv and the default model are ready; a missing MassGen is only reported. */
export async function prepareTestEnvironment(env = process.env) {
  const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { stdio: 'inherit', env, cwd: root, ...opts }).status ?? 1;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'massgen-rl-prepare-'));
  const outside = outsideVenvs(env, path.join(work, 'outside-venvs.log'));
  try {
    console.log('== environment: massgen-rl doctor --fix (creates the trainer venv and the default model once) ==');
    const doctor = run(process.execPath, [path.join(root, 'bin/massgen-rl.js'), 'doctor', '--fix'], { cwd: work });
    const codes = await outside.done;
    console.log(
      '\n== environment: massgen 0.1.97, then Arize Phoenix and the OpenTelemetry SDK (installed meanwhile) ==',
    );
    process.stdout.write(fs.readFileSync(outside.log, 'utf8'));
    if (codes.massgen !== 0)
      console.log('massgen could not be installed (see above): the tests that need it skip locally and fail in CI');
    if (codes.telemetry !== 0)
      console.log('they could not be installed (see above): the tests that need them skip locally and fail in CI');
    if (doctor !== 0) {
      console.error('the environment could not be prepared; see the doctor output above');
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
  return true;
}

/**
 * The real MassGen and then Phoenix with the Python OpenTelemetry SDK, each in its own venv under the cache (once,
 * then reused), one after the other (both set up the same uv on a first run), in the background, output to `log`.
 */
function outsideVenvs(env, log) {
  const script = (name) => path.join(root, 'scripts', name);
  const fd = fs.openSync(log, 'w');
  const step = (name) =>
    new Promise((resolve) => {
      const child = spawn('sh', [script(name)], { stdio: ['ignore', fd, fd], env, cwd: root });
      child.on('error', () => resolve(1));
      child.on('close', (code) => resolve(code ?? 1));
    });
  const done = (async () => {
    const massgen = await step('setup-massgen-venv.sh');
    const telemetry = await step('setup-telemetry-venv.sh');
    fs.closeSync(fd);
    return { massgen, telemetry };
  })();
  return { log, done };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exit((await prepareTestEnvironment({ ...process.env, HF_HUB_OFFLINE: '1', NO_COLOR: '1' })) ? 0 : 1);
}
