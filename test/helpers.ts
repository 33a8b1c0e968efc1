import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig, type LoadedConfig } from '../src/config/load.js';
import { storeDb, type Store } from '../src/store/store.js';
import { tempDir } from './support/temp-dirs.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const BIN = path.join(ROOT, 'bin', 'massgen-rl.js');
export const FIXTURES = path.join(ROOT, 'test', 'fixtures');

export { tempDir };

/** Writes a config into a temp dir and loads it. */
export function configIn(
  yaml: string,
  files: Record<string, string> = {},
  env: NodeJS.ProcessEnv = process.env,
): LoadedConfig {
  const dir = tempDir({ 'massgen-rl.yaml': yaml, ...files });
  return loadConfig({ cwd: dir, env });
}

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI as a user would (no TTY). */
export async function runCli(
  args: string[],
  opts: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<CliResult> {
  const r = await execa(process.execPath, [BIN, ...args], {
    cwd: opts.cwd,
    env: { NO_COLOR: '1', ...opts.env },
    reject: false,
    stdin: 'ignore',
    timeout: opts.timeoutMs ?? 60_000,
  });
  return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
}

export function sha(file: string): string {
  return fs.existsSync(file) ? fs.readFileSync(file).toString('base64') : '<missing>';
}

/** No stack trace in user-facing output. */
export function hasStack(text: string): boolean {
  return /\n\s+at .+:\d+:\d+\)?/.test(text) || text.includes('internal error');
}

/** The issues a config is refused with (it must be refused). */
export function configIssues(yaml: string): string[] {
  try {
    configIn(yaml, {}, {});
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

/** A process of this host is alive. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The better-sqlite3 handle under a SQLite store, for pragmas and other SQLite-only checks. */
export function sqliteOf(store: Store): import('better-sqlite3').Database {
  const db = storeDb(store) as { dialect?: string; native?: import('better-sqlite3').Database };
  if (db.dialect !== 'sqlite' || !db.native) throw new Error('not a SQLite store');
  return db.native;
}
