/**
 * The real MassGen (from PyPI) for tests and fixture scripts: where it is installed and how to run it offline.
 *
 * Install: scripts/setup-massgen-venv.sh (CI runs it from .ci/run). The venv is $MASSGEN_VENV, else
 * ${XDG_CACHE_HOME:-~/.cache}/massgen-rl/massgen-bench-venv (the benchmark's venv, the same install).
 *
 * describeWithMassgen (./massgen-describe.ts) runs a block only where it is installed and fails it in CI.
 *
 * Every run is offline: bench/lib/massgen-site/sitecustomize.py (on PYTHONPATH) refuses any connection
 * that leaves the machine and logs it (returned as `egress`), and gives MassGen LiteLLM's bundled pricing
 * table instead of the one it downloads. Point the agents at a local server (test/support/scripted-server.ts)
 * with backend `vllm` and a `base_url`: it needs no API key (`chatcompletion` with a dummy key validates but
 * fails at run time).
 */
import { execa } from 'execa';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export const MASSGEN_VERSION = '0.1.97';
export const SETUP_SCRIPT = 'scripts/setup-massgen-venv.sh';

export function massgenVenv(env: NodeJS.ProcessEnv = process.env): string {
  return (
    env.MASSGEN_VENV
    || path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'massgen-rl', 'massgen-bench-venv')
  );
}

export function massgenBin(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(massgenVenv(env), 'bin', 'massgen');
}

/** Whether the expected MassGen is installed; `reason` says what is missing. Checked once per test file. */
export function massgenAvailability(
  env: NodeJS.ProcessEnv = process.env,
): { ok: true } | { ok: false; reason: string } {
  const venv = massgenVenv(env);
  if (!fs.existsSync(massgenBin(env))) return { ok: false, reason: `massgen is not installed (no ${massgenBin(env)})` };
  const r = spawnSync(
    path.join(venv, 'bin', 'python'),
    ['-c', 'import importlib.metadata as m; print(m.version("massgen"))'],
    { encoding: 'utf8' },
  );
  const version = r.stdout?.trim();
  if (r.status !== 0)
    return {
      ok: false,
      reason: `the MassGen venv ${venv} does not run: ${(r.stderr || String(r.error)).trim().split('\n').pop()}`,
    };
  if (version !== MASSGEN_VERSION)
    return { ok: false, reason: `${venv} holds massgen ${version}, the tests expect ${MASSGEN_VERSION}` };
  return { ok: true };
}

/** Environment for a MassGen process: isolated HOME, offline, no telemetry, no colour. */
export function massgenEnv(home: string, egressLog: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: `${path.join(massgenVenv(), 'bin')}:/usr/local/bin:/usr/bin:/bin`,
    HOME: home,
    XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_CONFIG_HOME: path.join(home, '.config'),
    PYTHONPATH: path.join(ROOT, 'bench', 'lib', 'massgen-site'),
    MASSGEN_BENCH_EGRESS_LOG: egressLog,
    NO_PROXY: '127.0.0.1,localhost',
    no_proxy: '127.0.0.1,localhost',
    LITELLM_LOCAL_MODEL_COST_MAP: 'True',
    HF_HUB_OFFLINE: '1',
    MASSGEN_LOGFIRE_ENABLED: 'false',
    MEM0_TELEMETRY: 'False',
    ANONYMIZED_TELEMETRY: 'False',
    DO_NOT_TRACK: '1',
    LITELLM_TELEMETRY: 'False',
    GIT_PYTHON_REFRESH: 'quiet',
    PYTHONWARNINGS: 'ignore',
    PYTHONUNBUFFERED: '1',
    NO_COLOR: '1',
    TERM: 'dumb',
    ...extra,
  };
}

export interface MassgenRun {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** The log_<timestamp> directory this run wrote under <cwd>/.massgen/massgen_logs, or null. */
  logDir: string | null;
  /** WINNER: from the --automation summary. */
  winner: string | null;
  /** Connections MassGen tried to open off this machine (refused); empty when it stayed offline. */
  egress: string[];
  wallMs: number;
}

export interface RunMassgenOptions {
  /** The project directory: MassGen writes .massgen/ (logs, sessions) here. */
  cwd: string;
  configFile: string;
  question: string;
  env?: NodeJS.ProcessEnv;
  /** Extra CLI flags, before the question. */
  args?: string[];
  timeoutMs?: number;
}

const logDirsIn = (cwd: string) => {
  const dir = path.join(cwd, '.massgen', 'massgen_logs');
  return fs.existsSync(dir)
    ? fs
        .readdirSync(dir)
        .filter((n) => n.startsWith('log_'))
        .map((n) => path.join(dir, n))
    : [];
};

/** `massgen --automation --config FILE QUESTION` as a user runs it from a script (logging on, no TUI). */
export async function runMassgen(opts: RunMassgenOptions): Promise<MassgenRun> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'massgen-home-'));
  const egressLog = path.join(home, 'egress.log');
  const before = new Set(logDirsIn(opts.cwd));
  const t0 = Date.now();
  try {
    const r = await execa(
      massgenBin(),
      ['--automation', '--no-session-registry', '--config', opts.configFile, ...(opts.args ?? []), opts.question],
      {
        cwd: opts.cwd,
        env: massgenEnv(home, egressLog, opts.env),
        extendEnv: false,
        reject: false,
        stdin: 'ignore',
        timeout: opts.timeoutMs ?? 180_000,
      },
    );
    const stdout = String(r.stdout);
    const created = logDirsIn(opts.cwd)
      .filter((d) => !before.has(d))
      .sort();
    return {
      exitCode: r.exitCode ?? -1,
      stdout,
      stderr: String(r.stderr),
      logDir: created.at(-1) ?? null,
      winner: /^WINNER: (.+)$/m.exec(stdout)?.[1]?.trim() ?? null,
      egress: fs.existsSync(egressLog) ? fs.readFileSync(egressLog, 'utf8').split('\n').filter(Boolean) : [],
      wallMs: Date.now() - t0,
    };
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}

/** `massgen --validate FILE --json`: exit 0 when valid, 1 when not; MassGen ignores keys it does not know. */
export async function validateMassgenConfig(configFile: string, opts: { cwd?: string; strict?: boolean } = {}) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'massgen-home-'));
  try {
    const r = await execa(massgenBin(), ['--validate', configFile, '--json', ...(opts.strict ? ['--strict'] : [])], {
      cwd: opts.cwd ?? path.dirname(configFile),
      env: massgenEnv(home, path.join(home, 'egress.log')),
      extendEnv: false,
      reject: false,
      stdin: 'ignore',
      timeout: 120_000,
    });
    let report: { valid: boolean; errors: unknown[]; warnings: unknown[] } | null = null;
    try {
      report = JSON.parse(String(r.stdout));
    } catch {
      // not JSON: the caller sees stdout and stderr
    }
    return {
      exitCode: r.exitCode ?? -1,
      valid: r.exitCode === 0 && report?.valid === true,
      report,
      stdout: String(r.stdout),
      stderr: String(r.stderr),
    };
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}
