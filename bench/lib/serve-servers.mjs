// The servers the serve benchmark loads: ours (`python -m massgen_rl_serving`, one per engine) and
// llama-cpp-python's own OpenAI server as an outside reference, plus their memory from /proc.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { cacheDir } from '../../dist/config/paths.js';

const live = new Set(); // servers still running: killed if the benchmark exits without stopping them
const PYTHON_DIR = fileURLToPath(new URL('../../python', import.meta.url));

export function defaultModelDir(env = process.env) {
  return env.MASSGEN_RL_DEFAULT_MODEL_DIR || path.join(cacheDir(env), 'models', 'smollm2-135m-instruct');
}

export function trainerPython(env = process.env) {
  return path.join(env.MASSGEN_RL_VENV ?? path.join(cacheDir(env), 'venv'), 'bin', 'python');
}

/**
 * Starts our server on `engine` (`llama.cpp:shared`: llama.cpp with `--kv-cache-layout shared`); resolves with its
 * `ready` event once it answers, rejects on `error` or exit.
 */
export function startOurServer({ engine, modelDir, maxBatchSize, logFile, extraArgs = [] }) {
  const [name, layout] = engine.split(':');
  const args = [
    '-m',
    'massgen_rl_serving',
    '--model',
    modelDir,
    '--served-name',
    'bench',
    '--engine',
    name,
    '--max-batch-size',
    String(maxBatchSize),
    '--port',
    '0',
    ...(layout ? ['--kv-cache-layout', layout] : []),
    ...extraArgs,
  ];
  const env = {
    ...process.env,
    PYTHONPATH: PYTHON_DIR,
    HF_HUB_OFFLINE: '1',
    TOKENIZERS_PARALLELISM: 'false',
    PYTHONUNBUFFERED: '1',
  };
  const child = spawnLogged(trainerPython(), args, env, logFile, 'pipe');
  const stop = stopper(child);
  return new Promise((resolve, reject) => {
    let failure = null;
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      let event;
      try {
        event = JSON.parse(line);
      } catch {
        return;
      }
      if (event.event === 'ready') resolve({ engine, pid: child.pid, baseUrl: event.base_url, ready: event, stop });
      if (event.event === 'error') failure = event.message;
    });
    child.once('exit', (code, signal) => {
      reject(
        new Error(
          `the ${engine} server exited (${code ?? signal}) before it was ready: ${failure ?? `see ${logFile}`}`,
        ),
      );
    });
  });
}

/** llama-cpp-python's server on `gguf`, in its own venv (created once); rejects with the reason it cannot run. */
export async function startReferenceServer({ gguf, threads, logFile, timeoutS = 180 }) {
  const python = await ensureReferenceVenv(logFile);
  const port = await freePort();
  const args = [
    '-m',
    'llama_cpp.server',
    '--model',
    gguf,
    '--model_alias',
    'bench',
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--n_threads',
    String(threads),
    '--n_threads_batch',
    String(threads),
  ];
  const child = spawnLogged(python, args, { ...process.env, PYTHONUNBUFFERED: '1' }, logFile, 'log');
  let exited = null;
  child.once('exit', (code, signal) => {
    exited = code ?? signal;
  });
  const baseUrl = `http://127.0.0.1:${port}/v1`;
  const deadline = Date.now() + timeoutS * 1000;
  while (!(await answers(`${baseUrl}/models`))) {
    if (exited !== null) throw new Error(`llama_cpp.server exited (${exited}) before it answered; see ${logFile}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`llama_cpp.server did not answer within ${timeoutS} s; see ${logFile}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  const version = await run(python, ['-c', 'import llama_cpp; print(llama_cpp.__version__)']);
  return {
    engine: 'llama-cpp-python-server',
    pid: child.pid,
    baseUrl,
    ready: { gguf, threads, port, llama_cpp_python: version.trim(), python },
    stop: stopper(child),
  };
}

/**
 * ~/.cache/massgen-rl/bench-llama-server-venv: a plain venv (base interpreter of the trainer venv) with the
 * llama-cpp-python wheel our llama.cpp engine built, and its [server] extras from PyPI. Never the shared venv.
 */
async function ensureReferenceVenv(logFile) {
  const venv = path.join(cacheDir(), 'bench-llama-server-venv');
  const python = path.join(venv, 'bin', 'python');
  if (
    fs.existsSync(python)
    && (await run(python, ['-c', 'import llama_cpp.server.app'], logFile).then(
      () => true,
      () => false,
    ))
  )
    return python;
  const wheels = path.join(cacheDir(), 'wheels');
  const wheel = (fs.existsSync(wheels) ? fs.readdirSync(wheels) : [])
    .filter((d) => d.startsWith('llama-cpp-python-'))
    .flatMap((d) =>
      fs
        .readdirSync(path.join(wheels, d))
        .filter((f) => f.endsWith('.whl'))
        .map((f) => path.join(wheels, d, f)),
    )
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
  if (!wheel) throw new Error(`no llama-cpp-python wheel under ${wheels} (built by the llama.cpp engine's setup)`);
  const base = (await run(trainerPython(), ['-c', 'import sys; print(sys._base_executable)'])).trim();
  await run(base, ['-m', 'venv', '--clear', venv], logFile);
  await run(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '-q', `${wheel}[server]`], logFile);
  return python;
}

/** VmRSS (now) and VmHWM (peak so far) of a process, in MB; null once it is gone. */
export function memoryMb(pid) {
  let status;
  try {
    status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
}

const USER_HZ = 100; // the unit of /proc/<pid>/stat times on Linux, whatever the kernel's own tick rate

/** CPU seconds (user + system, all threads) a process has used so far; null once it is gone. */
export function cpuSeconds(pid) {
  let stat;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields[0] is field 3 (state)
  return (Number(fields[11]) + Number(fields[12])) / USER_HZ;
}

/** The child's stderr (and stdout unless piped) appended to logFile; our copy of the descriptor is closed at once. */
function spawnLogged(cmd, args, env, logFile, stdout) {
  const log = fs.openSync(logFile, 'a');
  try {
    const child = spawn(cmd, args, { env, stdio: ['ignore', stdout === 'pipe' ? 'pipe' : log, log] });
    if (!live.hooked) {
      process.once('exit', () => live.forEach((c) => c.kill('SIGKILL')));
      process.once('SIGINT', () => process.exit(130));
      process.once('SIGTERM', () => process.exit(143));
    }
    live.hooked = true;
    live.add(child);
    child.once('exit', () => live.delete(child));
    return child;
  } finally {
    fs.closeSync(log);
  }
}

function stopper(child) {
  return () =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const kill = setTimeout(() => child.kill('SIGKILL'), 15000);
      child.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      child.kill('SIGTERM');
    });
}

function run(cmd, args, logFile) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.once('error', reject);
    child.once('close', (code) => {
      if (logFile) fs.appendFileSync(logFile, `$ ${cmd} ${args.join(' ')}\n${out}${err}`);
      if (code === 0) resolve(out);
      else
        reject(
          new Error(
            `${path.basename(cmd)} ${args.slice(0, 3).join(' ')} failed (exit ${code}): ${err.trim().split('\n').slice(-2).join(' ')}`,
          ),
        );
    });
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net
      .createServer()
      .once('error', reject)
      .listen(0, '127.0.0.1', () => {
        const { port } = srv.address();
        srv.close(() => resolve(port));
      });
  });
}

async function answers(url) {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2000) })).ok;
  } catch {
    return false;
  }
}
