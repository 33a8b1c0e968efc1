import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { UserError, errorMessage } from '../errors.js';
import { eachLine, LineTail } from '../util/bounded-lines.js';
import { PYTHON_DIR } from './module.js';
import type { Requirements } from './requirements.js';

export type VenvState = 'missing' | 'ok' | 'outdated' | 'broken' | 'foreign';

export interface VenvInfo {
  dir: string;
  python: string;
  state: VenvState;
  detail: string;
  pythonVersion?: string;
}

export interface BasePython {
  command: string;
  found: boolean;
  version?: string;
  executable?: string;
  hasVenv?: boolean;
  error?: string;
}

const STAMP = '.massgen-rl-venv.json';
const MIN_PYTHON: [number, number] = [3, 10];

export function venvPython(dir: string): string {
  return path.join(dir, 'bin', 'python');
}

/** Probes an interpreter: version, and whether it can create virtualenvs. */
export async function probePython(command: string): Promise<BasePython> {
  const code =
    'import sys, json\ntry:\n import venv, ensurepip; ok = True\nexcept Exception: ok = False\nprint(json.dumps({"v": "%d.%d.%d" % sys.version_info[:3], "exe": sys.executable, "venv": ok}))';
  const r = await execa(command, ['-c', code], { reject: false, timeout: 30_000, stdin: 'ignore', maxBuffer: 1 << 20 });
  if (r.failed || r.exitCode !== 0) {
    const why =
      (r as { code?: string }).code === 'ENOENT'
        ? 'not found'
        : String(r.stderr || r.shortMessage)
            .split('\n')
            .pop();
    return { command, found: false, error: why };
  }
  const info = JSON.parse(r.stdout.trim().split('\n').pop()!) as { v: string; exe: string; venv: boolean };
  return { command, found: true, version: info.v, executable: info.exe, hasVenv: info.venv };
}

export function pythonTooOld(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major < MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor < MIN_PYTHON[1]);
}

export async function inspectVenv(dir: string, req: Requirements): Promise<VenvInfo> {
  const python = venvPython(dir);
  const info = (state: VenvState, detail: string, pythonVersion?: string): VenvInfo => ({
    dir,
    python,
    state,
    detail,
    pythonVersion,
  });
  if (!fs.existsSync(dir)) return info('missing', `no virtualenv at ${dir}`);
  if (!fs.existsSync(path.join(dir, 'pyvenv.cfg'))) {
    return fs.readdirSync(dir).length
      ? info('foreign', `${dir} exists but is not a virtualenv`)
      : info('missing', `${dir} is empty`);
  }
  const probe = await probePython(python);
  if (!probe.found) return info('broken', `its interpreter does not run (${probe.error ?? 'unknown error'})`);
  const stamp = readStamp(dir);
  if (stamp?.requirements_hash !== req.hash)
    return info('outdated', 'pinned packages are not installed yet', probe.version);
  return info('ok', `Python ${probe.version}, packages ${req.hash}`, probe.version);
}

export interface EnsureVenvOptions {
  dir: string;
  basePython: string;
  req: Requirements;
  onLine?: (line: string) => void;
}

/** Creates, repairs or updates the trainer virtualenv so that it holds exactly the pinned packages. */
export async function ensureVenv(opts: EnsureVenvOptions): Promise<VenvInfo> {
  let current = await inspectVenv(opts.dir, opts.req);
  if (current.state === 'ok') return current;
  if (current.state === 'foreign') {
    throw new UserError(
      `${current.detail}; refusing to change it`,
      'remove it, or set train.venv to another directory',
    );
  }
  if (current.state === 'missing' || current.state === 'broken') {
    const base = await probePython(opts.basePython);
    if (!base.found) {
      throw new UserError(
        `Python interpreter "${opts.basePython}" (train.python) ${base.error ?? 'not found'}`,
        'install Python 3.10+ (apt-get install python3 python3-venv) or set train.python',
      );
    }
    if (pythonTooOld(base.version!))
      throw new UserError(`train.python is Python ${base.version}; the trainers need ${MIN_PYTHON.join('.')}+`);
    if (!base.hasVenv)
      throw new UserError(
        `Python ${base.version} at ${base.executable} cannot create virtualenvs`,
        'install the venv module (apt-get install python3-venv)',
      );
    if (current.state === 'broken') fs.rmSync(opts.dir, { recursive: true, force: true });
    opts.onLine?.(`creating virtualenv ${opts.dir}`);
    await run(base.executable!, ['-m', 'venv', opts.dir], opts.onLine, 'create the virtualenv');
  }
  opts.onLine?.(
    `installing ${opts.req.specs.length} pinned packages (torch brings its CUDA libraries: several GB on first install)`,
  );
  await run(
    venvPython(opts.dir),
    ['-m', 'pip', 'install', '--disable-pip-version-check', '--progress-bar', 'off', ...opts.req.specs],
    opts.onLine,
    'install the trainer packages',
  );
  for (const spec of opts.req.built) {
    opts.onLine?.(`building ${spec} for this CPU (llama.cpp from source: several minutes the first time)`);
    await run(
      venvPython(opts.dir),
      ['-m', 'massgen_rl_serving.llama_setup', '--spec', spec],
      opts.onLine,
      `build ${spec}`,
      { PYTHONPATH: PYTHON_DIR },
    );
  }
  fs.writeFileSync(
    path.join(opts.dir, STAMP),
    JSON.stringify(
      {
        created_by: 'massgen-rl',
        requirements_hash: opts.req.hash,
        requirements: opts.req.specs,
        updated_at: new Date().toISOString(),
      },
      null,
      2,
    ),
  );
  current = await inspectVenv(opts.dir, opts.req);
  if (current.state !== 'ok')
    throw new UserError(`the virtualenv at ${opts.dir} is still ${current.state} after repair: ${current.detail}`);
  return current;
}

function readStamp(dir: string): { requirements_hash?: string } | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, STAMP), 'utf8')) as { requirements_hash?: string };
  } catch {
    return undefined;
  }
}

async function run(
  command: string,
  args: string[],
  onLine: ((l: string) => void) | undefined,
  what: string,
  env: Record<string, string> = {},
): Promise<void> {
  const child = execa(command, args, {
    reject: false,
    all: true,
    buffer: false,
    stdin: 'ignore',
    env: { PIP_NO_INPUT: '1', ...env },
  });
  const tail = new LineTail(8);
  const lines = eachLine(child.all!, (line) => {
    tail.push(line);
    onLine?.(line);
  });
  const r = await child;
  await lines;
  if (r.exitCode !== 0) {
    throw new UserError(
      `could not ${what} (${command} exited with ${r.exitCode ?? errorMessage(r)}):\n    ${tail.lines().join('\n    ')}`,
    );
  }
}
