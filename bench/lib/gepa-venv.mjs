// The Python venv the apo benchmark runs GEPA (PyPI `gepa`) in, outside the repository and created once:
//   $GEPA_VENV, else ${XDG_CACHE_HOME:-~/.cache}/massgen-rl/gepa-bench-venv
// Like scripts/setup-massgen-venv.sh: installed with uv (from the small side venv <cache>/uv-venv, made on first
// use), versions pinned. litellm is what GEPA's default adapter and gepa.lm.LM call models through; gepa declares
// it only in its `full` extra (with mlflow, wandb, datasets, which the benchmark does not use), so it is pinned
// here inside that extra's range (>=1.83.0,<1.92). A marker written after the install names the pins: a venv
// without it (an interrupted install) or with other pins is rebuilt. Creating it needs PyPI; running it does not.
import { execa } from 'execa';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const GEPA_PINS = ['gepa==0.1.4', 'litellm==1.91.5'];
const MARKER = '.massgen-rl-gepa-pins';

export function gepaCacheDir(env = process.env) {
  return path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'massgen-rl');
}

export function gepaVenv(env = process.env) {
  return env.GEPA_VENV || path.join(gepaCacheDir(env), 'gepa-bench-venv');
}

export function gepaPython(env = process.env) {
  return path.join(gepaVenv(env), 'bin', 'python');
}

/** Whether the venv holds the pinned install; `reason` says what is missing. */
export function gepaVenvStatus(env = process.env) {
  const venv = gepaVenv(env);
  if (!fs.existsSync(gepaPython(env))) return { ok: false, reason: `no GEPA venv at ${venv}` };
  const marker = path.join(venv, MARKER);
  const pins = fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8').trim() : '';
  if (pins !== GEPA_PINS.join(' '))
    return {
      ok: false,
      reason: `${venv} does not hold ${GEPA_PINS.join(' ')} (${pins ? `it holds ${pins}` : 'no completed install'})`,
    };
  return { ok: true, venv };
}

const pending = new Map();

/**
 * The venv's python, creating the venv first when it is missing or holds other pins (minutes, once).
 * Throws an Error saying which step failed and its output when it cannot be built (no PyPI, no Python 3.10+).
 */
export function ensureGepaVenv({ env = process.env, log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  if (gepaVenvStatus(env).ok) return Promise.resolve(gepaPython(env));
  const venv = gepaVenv(env);
  if (!pending.has(venv))
    pending.set(
      venv,
      createVenv(env, log).finally(() => pending.delete(venv)),
    );
  return pending.get(venv);
}

async function createVenv(env, log) {
  const venv = gepaVenv(env);
  const cache = gepaCacheDir(env);
  const python = env.PYTHON || 'python3';
  const uvVenv = path.join(cache, 'uv-venv');
  const uv = path.join(uvVenv, 'bin', 'uv');
  const step = async (what, cmd, args) => {
    try {
      await execa(cmd, args, { env: { ...env, HF_HUB_OFFLINE: '1', LITELLM_LOCAL_MODEL_COST_MAP: 'True' }, all: true });
    } catch (err) {
      throw new Error(
        `could not create the GEPA venv at ${venv}: ${what} failed (${err.shortMessage ?? err.message})\n${(err.all ?? '').trim().split('\n').slice(-15).join('\n')}`,
      );
    }
  };
  log(`creating the GEPA venv at ${venv} (${GEPA_PINS.join(', ')}; once)`);
  const t0 = performance.now();
  await step(`${python} 3.10+`, python, [
    '-c',
    'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "gepa needs Python 3.10+ (set PYTHON=...)")',
  ]);
  fs.mkdirSync(cache, { recursive: true });
  if (!fs.existsSync(uv)) {
    await step('creating the uv side venv', python, ['-m', 'venv', uvVenv]);
    await step('installing uv', path.join(uvVenv, 'bin', 'pip'), ['install', '-q', 'uv']);
  }
  fs.rmSync(venv, { recursive: true, force: true });
  await step('creating the venv', python, ['-m', 'venv', venv]);
  await step(`installing ${GEPA_PINS.join(' ')}`, uv, [
    'pip',
    'install',
    '--compile-bytecode',
    '--python',
    gepaPython(env),
    ...GEPA_PINS,
  ]);
  await step('importing gepa and litellm', gepaPython(env), ['-c', 'import gepa, litellm']);
  fs.writeFileSync(path.join(venv, MARKER), `${GEPA_PINS.join(' ')}\n`);
  log(`GEPA venv ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return gepaPython(env);
}
