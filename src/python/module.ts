import { execa } from 'execa';
import { fileURLToPath } from 'node:url';
import { UserError } from '../errors.js';
import { eachLine, LineTail } from '../util/bounded-lines.js';

/** The bundled Python packages (python/), put on PYTHONPATH rather than installed, so every checkout runs its own code. */
export const PYTHON_DIR = fileURLToPath(new URL('../../python', import.meta.url));

export interface PyEvent {
  event: string;
  [key: string]: unknown;
}

export interface RunModuleOptions {
  python: string;
  module: string;
  args?: readonly string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
  onEvent?: (event: PyEvent) => void;
  onStderr?: (line: string) => void;
}

export interface RunModuleResult {
  exitCode: number;
  events: PyEvent[];
  done?: PyEvent;
  error?: string;
  stderrTail: string[];
}

/** Environment for every Python child: offline, unbuffered, our package importable. */
export function pythonEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const path = [PYTHON_DIR, process.env.PYTHONPATH].filter(Boolean).join(':');
  return {
    HF_HUB_OFFLINE: '1',
    TRANSFORMERS_OFFLINE: '1',
    HF_DATASETS_OFFLINE: '1',
    HF_HUB_DISABLE_TELEMETRY: '1',
    TOKENIZERS_PARALLELISM: 'false',
    PYTHONUNBUFFERED: '1',
    PYTHONPATH: path,
    ...extra,
  };
}

/** Runs `python -m module args…`, parsing JSON-lines events from stdout; stderr is free-form log. */
export async function runPythonModule(opts: RunModuleOptions): Promise<RunModuleResult> {
  const child = execa(opts.python, ['-m', opts.module, ...(opts.args ?? [])], {
    env: pythonEnv(opts.env),
    cwd: opts.cwd,
    reject: false,
    buffer: false,
    stdin: 'ignore',
    timeout: opts.timeoutMs,
    cancelSignal: opts.signal,
    forceKillAfterDelay: 5000,
  });
  const result: RunModuleResult = { exitCode: 0, events: [], stderrTail: [] };
  const stderrTail = new LineTail(40);
  const stdout = eachLine(child.stdout!, (line) => {
    const ev = parseEvent(line);
    if (!ev) {
      opts.onStderr?.(line);
      return;
    }
    result.events.push(ev);
    if (ev.event === 'done') result.done = ev;
    if (ev.event === 'error') result.error = String(ev.message ?? 'unknown error');
    opts.onEvent?.(ev);
  });
  const stderr = eachLine(child.stderr!, (line) => {
    stderrTail.push(line);
    opts.onStderr?.(line);
  });
  const finished = await child;
  await Promise.all([stdout, stderr]);
  result.stderrTail = stderrTail.lines();
  if ((finished as { code?: string }).code === 'ENOENT') {
    throw new UserError(`python interpreter not found: ${opts.python}`, 'run `massgen-rl doctor --fix`');
  }
  result.exitCode = finished.exitCode ?? (finished.isTerminated ? 128 : 1);
  if (finished.timedOut) result.error ??= `timed out after ${opts.timeoutMs} ms`;
  return result;
}

/** One stdout line as a protocol event, or undefined when it is not one. */
export function parseEvent(line: string): PyEvent | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const value = JSON.parse(line) as unknown;
    return value && typeof value === 'object' && typeof (value as PyEvent).event === 'string'
      ? (value as PyEvent)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Why a module run failed, in one line, for error messages. */
export function failureReason(r: RunModuleResult): string {
  return (
    r.error
    ?? (r.stderrTail
      .filter((l) => l.trim())
      .slice(-3)
      .join(' | ')
      || `exit code ${r.exitCode}`)
  );
}
