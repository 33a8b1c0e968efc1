import { execa } from 'execa';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { BIN, hasStack } from '../../helpers.js';

export interface CliRun {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  ms: number;
}

/** The secret the scripted endpoint's models read from api_key_env. */
export const FUZZ_KEY = 'sk-fuzz-0123456789abcdefghijkl';

/**
 * Runs the built CLI as a user would, with nothing from this process's environment but PATH: HOME is the
 * case directory and the cache directory is empty (no trainer venv, no default model), so no command can
 * start Python or touch the real caches. A run that has not exited after `timeoutMs` is killed.
 */
export async function runBounded(
  args: string[],
  cwd: string,
  opts: { timeoutMs: number; cacheDir: string },
): Promise<CliRun> {
  const started = performance.now();
  const r = await execa(process.execPath, [BIN, ...args], {
    cwd,
    reject: false,
    stdin: 'ignore',
    timeout: opts.timeoutMs,
    killSignal: 'SIGKILL',
    extendEnv: false,
    maxBuffer: 4 << 20,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: cwd,
      NO_COLOR: '1',
      HF_HUB_OFFLINE: '1',
      CI: 'true',
      MASSGEN_RL_CACHE_DIR: opts.cacheDir,
      FUZZ_KEY,
    },
  });
  return {
    exitCode: r.exitCode ?? null,
    signal: r.signal ?? null,
    timedOut: Boolean(r.timedOut),
    stdout: String(r.stdout ?? ''),
    stderr: String(r.stderr ?? ''),
    ms: performance.now() - started,
  };
}

/** Every entry under dir, without following links or opening anything but regular files. */
export function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string) => {
    const abs = path.join(dir, rel);
    const st = fs.lstatSync(abs);
    if (st.isSymbolicLink()) out.set(rel, `link ${fs.readlinkSync(abs)}`);
    else if (st.isFile()) out.set(rel, crypto.createHash('sha1').update(fs.readFileSync(abs)).digest('hex'));
    else if (st.isDirectory()) {
      out.set(rel, 'dir');
      for (const name of fs.readdirSync(abs).sort()) walk(path.join(rel, name));
    } else out.set(rel, `special ${st.mode}`);
  };
  walk('');
  return out;
}

export function changedEntries(before: Map<string, string>, after: Map<string, string>): string[] {
  const keys = new Set([...before.keys(), ...after.keys()]);
  return [...keys]
    .filter((k) => before.get(k) !== after.get(k))
    .map((k) => `${k || '.'}: ${before.get(k) ?? 'absent'} → ${after.get(k) ?? 'absent'}`);
}

const SECTIONS = [
  'project',
  'store',
  'models',
  'prompts',
  'tools',
  'agents',
  'orchestrator',
  'tasks',
  'rewards',
  'collect',
  'train',
  'eval',
  'deploy',
  'loop',
  'privacy',
];
/** file.ext:line (a column may follow); URLs are taken out first, so a host:port does not count. */
const FILE_LINE = /[\w./-]*\.[A-Za-z][\w-]*:\d+\b/;
/** A config field path with at least one step, e.g. models.stub.timeout_ms or tasks.sources[0]. */
const FIELD = new RegExp(`(?:^|[^\\w.])(?:${SECTIONS.join('|')})(?:\\.[\\w$-]+|\\[\\d+\\])+`);

/**
 * Whether an exit-2 message (with its hint) tells the user where the problem is: a file:line, a config
 * field path, or one of `inputs`: a flag of the command (`--tasks`, matched as a whole word) or an input
 * file itself, for a problem with the file as a whole.
 */
export function locates(message: string, inputs: readonly string[]): boolean {
  const noUrls = message.replace(/\b[a-z][\w+.-]*:\/\/\S*/gi, '<url>');
  const names = (input: string) =>
    input.startsWith('--') ? new RegExp(`(?:^|\\s)${input}(?![\\w-])`).test(message) : message.includes(input);
  return FILE_LINE.test(noUrls) || FIELD.test(message) || inputs.some((f) => f && names(f));
}

/** What the CLI printed as the error: from `error: ` to the end of stderr (the message and its hint). */
export function errorText(stderr: string): string {
  const i = stderr.indexOf('error: ');
  return i < 0 ? stderr : stderr.slice(i);
}

export interface CaseOutcome {
  target: string;
  index: number;
  run: CliRun;
  failures: string[];
}

/** The suite's assertions on one run: exit 0/1/2, no stack, a located exit-2 message, nothing changed on exit 2, no hang. */
export function judge(
  run: CliRun,
  ctx: { inputs: readonly string[]; before: Map<string, string>; after: Map<string, string> },
): string[] {
  const failures: string[] = [];
  if (run.timedOut) failures.push(`hang: still running after ${Math.round(run.ms / 1000)} s (killed)`);
  else if (run.signal) failures.push(`killed by ${run.signal}`);
  else if (![0, 1, 2].includes(run.exitCode ?? -1)) failures.push(`exit code ${run.exitCode}`);
  if (hasStack(run.stderr) || hasStack(run.stdout)) failures.push('stack trace in the output');
  if (run.exitCode === 2) {
    if (!run.stderr.includes('error: ')) failures.push('exit 2 without an error message');
    else if (!locates(errorText(run.stderr), ctx.inputs))
      failures.push('exit-2 message names no file:line, config field, flag or input file');
    const changed = changedEntries(ctx.before, ctx.after);
    if (changed.length) failures.push(`exit 2 changed files: ${changed.slice(0, 5).join('; ')}`);
  }
  return failures;
}

/** Runs fn over items, `limit` at a time. */
export async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
