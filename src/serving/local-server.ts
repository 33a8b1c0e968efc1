import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import type { SERVE_ENGINES } from '../config/schema.js';
import { UserError } from '../errors.js';
import { parseEvent, pythonEnv, type PyEvent } from '../python/module.js';
import { eachLine, LineTail } from '../util/bounded-lines.js';
import { serverStarted } from '../util/profile-counters.js';

export type ServeDevice = 'auto' | 'cpu' | 'cuda';
export type ServeEngine = (typeof SERVE_ENGINES)[number];

export interface LocalServerOptions {
  /** The trainer venv's interpreter. */
  python: string;
  /** An HF model folder, or a LoRA adapter folder (adapter_config.json). */
  modelDir: string;
  /** The model name clients send (the config's `models.<name>.model`). */
  servedName: string;
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  device?: ServeDevice;
  /** auto: vLLM on a CUDA GPU when installed, else llama.cpp when installed, else transformers. */
  engine?: ServeEngine;
  maxBatchSize?: number;
  /** llama.cpp: KV cells per sequence, the context each request gets (default: the server's automatic size). */
  contextTokens?: number;
  /** Until `ready` and a healthy /health; default 180 s. */
  startupTimeoutMs?: number;
  /** The server's stderr (its log) is appended here. */
  logFile?: string;
  /** Aborting during startup kills the server and rejects; afterwards it stops the server. */
  signal?: AbortSignal;
  /** Base model folder of an adapter (default: from its adapter_config.json). */
  baseDir?: string;
  /** The name an adapter folder's adapter is loaded under beside the served name (default: its folder name). */
  adapterName?: string;
  /** llama.cpp: an adapter folder served merged into its base's weights (no other adapter loads beside it). */
  mergeAdapter?: boolean;
  /** Every protocol event (progress while loading, ready, done, error). */
  onEvent?: (event: PyEvent) => void;
}

export interface LocalServer {
  /** OpenAI-compatible base URL, http://host:port/v1 */
  baseUrl: string;
  model: string;
  pid: number;
  /** The server's ready event: backend (llama.cpp|transformers|vllm), device, port, base (the base model folder), … */
  ready: PyEvent;
  /** Settles with the exit code (null when killed by a signal) whenever the process ends. */
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after 5 s; resolves once the process is gone. Idempotent. */
  stop(): Promise<void>;
}

/** A server that did not come up; `killed`: its process ended by a signal (kill -9, the OOM killer) while starting. */
export class ServerStartError extends UserError {
  constructor(
    message: string,
    hint: string | undefined,
    readonly killed: boolean,
  ) {
    super(message, hint);
    this.name = 'ServerStartError';
  }
}

const SERVE_MODULE = 'massgen_rl_serving';
const KILL_AFTER_MS = 5000;
const TAIL_LINES = 40;

/** Starts `python -m massgen_rl_serving` and resolves once it is ready and answers /health. */
export async function startLocalServer(opts: LocalServerOptions): Promise<LocalServer> {
  const host = opts.host ?? '127.0.0.1';
  const timeoutMs = opts.startupTimeoutMs ?? 180_000;
  const what = `the local model server for "${opts.servedName}" (${opts.modelDir})`;
  if (opts.signal?.aborted) throw new UserError(`${what} was not started: cancelled`);

  const args = [
    '-m',
    SERVE_MODULE,
    '--model',
    opts.modelDir,
    '--served-name',
    opts.servedName,
    '--host',
    host,
    '--port',
    String(opts.port ?? 0),
    '--device',
    opts.device ?? 'auto',
    '--engine',
    opts.engine ?? 'auto',
    '--max-batch-size',
    String(opts.maxBatchSize ?? 8),
    ...(opts.contextTokens ? ['--kv-cache-tokens', String(opts.contextTokens * (opts.maxBatchSize ?? 8))] : []),
    ...(opts.baseDir ? ['--base', opts.baseDir] : []),
    ...(opts.adapterName && opts.adapterName !== opts.servedName ? ['--adapter-name', opts.adapterName] : []),
    ...(opts.mergeAdapter ? ['--merge-adapter'] : []),
  ];
  const log = opts.logFile
    ? openLog(opts.logFile, `${new Date().toISOString()} ${opts.python} ${args.join(' ')}`)
    : undefined;
  const spawnedAt = performance.now();
  const child = execa(opts.python, args, {
    env: pythonEnv(),
    reject: false,
    buffer: false,
    stdin: 'ignore',
    cleanup: true,
    forceKillAfterDelay: KILL_AFTER_MS,
  });

  const tail = new LineTail(TAIL_LINES);
  let errorEvent: string | undefined;
  const note = (line: string) => {
    tail.push(line);
    log?.write(`${line}\n`);
  };
  let onReady: ((ev: PyEvent) => void) | undefined;
  const stdout = eachLine(child.stdout!, (line) => {
    const ev = parseEvent(line);
    if (!ev) return note(line);
    log?.write(`${line}\n`);
    if (ev.event === 'error') errorEvent = String(ev.message ?? 'unknown error');
    opts.onEvent?.(ev);
    if (ev.event === 'ready') onReady?.(ev);
  });
  const stderr = eachLine(child.stderr!, note);

  let gone = false;
  let endSignal: string | undefined;
  const exited: Promise<number | null> = child
    .then((r) => {
      gone = true;
      endSignal = r.signal ?? undefined;
      if ((r as { code?: string }).code === 'ENOENT') errorEvent ??= `python interpreter not found: ${opts.python}`;
      return r.exitCode ?? null;
    })
    .finally(() => log?.end());

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      if (!gone) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => {
          if (!gone) child.kill('SIGKILL');
        }, KILL_AFTER_MS + 500);
        await exited;
        clearTimeout(timer);
      }
      await exited;
    })());

  const fail = async (reason: string, hint?: string): Promise<never> => {
    const killed = endSignal !== undefined; // a signal ended it before we stopped it
    await stop();
    await Promise.all([closed(stdout), closed(stderr)]); // the last lines, and a late error event
    const lines = tail
      .lines()
      .filter((l) => l.trim())
      .slice(-12);
    const detail = lines.length ? `\n  last log lines:\n    ${lines.join('\n    ')}` : '';
    throw new ServerStartError(
      `${what} ${reason}${detail}`,
      hint ?? (opts.logFile ? `its full log is in ${opts.logFile}` : undefined),
      killed,
    );
  };

  const deadline = Date.now() + timeoutMs;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  type Outcome =
    { kind: 'ready'; ev: PyEvent } | { kind: 'exit'; code: number | null } | { kind: 'timeout' } | { kind: 'abort' };
  const outcome = await new Promise<Outcome>((resolve) => {
    onReady = (ev) => resolve({ kind: 'ready', ev });
    void exited.then((code) => resolve({ kind: 'exit', code }));
    timer = setTimeout(() => resolve({ kind: 'timeout' }), timeoutMs);
    onAbort = () => resolve({ kind: 'abort' });
    opts.signal?.addEventListener('abort', onAbort, { once: true });
  });
  clearTimeout(timer);
  opts.signal?.removeEventListener('abort', onAbort!);
  if (outcome.kind === 'exit') {
    await Promise.all([closed(stdout), closed(stderr)]);
    const enoent = errorEvent?.startsWith('python interpreter not found');
    return fail(
      enoent
        ? `could not start: ${errorEvent}`
        : `exited with code ${outcome.code ?? 'null (killed)'} before it was ready${errorEvent ? `: ${errorEvent}` : ''}`,
      enoent ? 'run `massgen-rl doctor --fix`' : undefined,
    );
  }
  if (outcome.kind === 'timeout')
    return fail(`was not ready within ${timeoutMs >= 1000 ? `${Math.round(timeoutMs / 1000)} s` : `${timeoutMs} ms`}`);
  if (outcome.kind === 'abort') return fail('was stopped: startup cancelled');

  const ready = outcome.ev;
  const baseUrl =
    typeof ready.base_url === 'string'
      ? ready.base_url
      : `http://${urlHost(String(ready.host ?? host))}:${String(ready.port)}/v1`;
  const health = await waitHealthy(
    baseUrl.replace(/\/v1\/?$/, '/health'),
    Math.max(5000, Math.min(deadline - Date.now(), 30_000)),
    () => gone,
    opts.signal,
  );
  if (health !== 'ok')
    return fail(health === 'exited' ? 'exited right after it reported ready' : `reported ready but ${health}`);
  opts.signal?.addEventListener('abort', () => void stop(), { once: true });
  const started = serverStarted({
    pid: child.pid!,
    statsUrl: baseUrl.replace(/\/v1\/?$/, '/stats'),
    spawnedAt,
    readyAt: performance.now(),
  });
  void exited.then(() => (started.exited = true));
  return { baseUrl, model: String(ready.model ?? opts.servedName), pid: child.pid!, ready, exited, stop };
}

/** A stream's end, but no later than withinMs: a grandchild may still hold the pipe open. */
function closed(ended: Promise<void>, withinMs = 2000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([ended, new Promise<void>((resolve) => (timer = setTimeout(resolve, withinMs)))]).finally(() =>
    clearTimeout(timer),
  );
}

/** A listening host as it goes in a URL: the wildcard addresses become loopback, IPv6 in brackets. */
export function urlHost(host: string): string {
  const h = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return h.includes(':') ? `[${h}]` : h;
}

async function waitHealthy(
  url: string,
  withinMs: number,
  exited: () => boolean,
  signal?: AbortSignal,
): Promise<'ok' | 'exited' | string> {
  const until = Date.now() + withinMs;
  let last = 'no answer';
  while (Date.now() < until) {
    if (exited()) return 'exited';
    if (signal?.aborted) return 'startup was cancelled';
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(Math.max(500, Math.min(5000, until - Date.now()))) });
      if (res.ok) return 'ok';
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return `${url} did not answer within ${Math.round(withinMs / 1000)} s (${last})`;
}

function openLog(file: string, header: string): fs.WriteStream | undefined {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const stream = fs.createWriteStream(file, { flags: 'a' });
    stream.on('error', () => {}); // a log we cannot write must not take the server down
    stream.write(`--- ${header}\n`);
    return stream;
  } catch {
    return undefined;
  }
}
