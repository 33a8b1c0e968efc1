/**
 * The real OpenTelemetry tools for tests: Arize Phoenix (an OTLP receiver with its own span API) and the Python
 * OpenTelemetry SDK with OpenInference's openai instrumentation, from PyPI in their own venv.
 *
 * Install: scripts/setup-telemetry-venv.sh (`npm test` runs it through scripts/prepare-tests.mjs). The venv is
 * $TELEMETRY_VENV, else ${XDG_CACHE_HOME:-~/.cache}/massgen-rl/telemetry-venv. describeWithTelemetry runs a block
 * only where it is installed, and fails it in CI.
 */
import { execa, type ResultPromise } from 'execa';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { tempDir } from '../helpers.js';
import { describeWhen } from './describe-when.js';
import { freePort } from './free-port.js';

export const PHOENIX_VERSION = '20.26.1';
const SETUP_SCRIPT = 'scripts/setup-telemetry-venv.sh';

export function telemetryVenv(env: NodeJS.ProcessEnv = process.env): string {
  return (
    env.TELEMETRY_VENV
    || path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'massgen-rl', 'telemetry-venv')
  );
}

export const telemetryPython = () => path.join(telemetryVenv(), 'bin', 'python');

function availability(): { ok: true } | { ok: false; reason: string } {
  if (!fs.existsSync(telemetryPython())) return { ok: false, reason: `no telemetry venv at ${telemetryVenv()}` };
  const r = spawnSync(telemetryPython(), ['-c', 'import importlib.metadata as m; print(m.version("arize-phoenix"))'], {
    encoding: 'utf8',
  });
  const version = r.stdout?.trim();
  if (version !== PHOENIX_VERSION)
    return {
      ok: false,
      reason: `${telemetryVenv()} holds arize-phoenix ${version || '(none)'}, not ${PHOENIX_VERSION}`,
    };
  return { ok: true };
}

/** describe() for tests on the real Phoenix and OpenTelemetry SDK: skipped without them, failed in CI. */
export function describeWithTelemetry(name: string, fn: () => void): void {
  const how = `install them with ${SETUP_SCRIPT}`;
  describeWhen(availability(), { tag: 'telemetry', what: 'real OpenTelemetry', how }, name, fn);
}

export interface Phoenix {
  url: string;
  /** Phoenix's REST API: GET `path` as JSON. */
  get(pathAndQuery: string): Promise<unknown>;
  stop(): Promise<void>;
}

export const PHOENIX_START_MS = 240_000;

/** A Phoenix server on loopback ports of its own, with its database in a temporary folder; ready when it answers. */
export async function startPhoenix(): Promise<Phoenix> {
  const [port, grpc] = [await freePort(), await freePort()];
  const dir = tempDir({});
  const proc: ResultPromise = execa(path.join(telemetryVenv(), 'bin', 'phoenix'), ['serve'], {
    env: {
      PHOENIX_HOST: '127.0.0.1',
      PHOENIX_PORT: String(port),
      PHOENIX_GRPC_PORT: String(grpc),
      PHOENIX_WORKING_DIR: dir,
      PHOENIX_TELEMETRY_ENABLED: 'false',
      DO_NOT_TRACK: '1',
    },
    reject: false,
    all: true,
  });
  const url = `http://127.0.0.1:${port}`;
  // Phoenix imports a large Python stack and migrates its database first: minutes on two cores shared with other tests
  const deadline = Date.now() + PHOENIX_START_MS;
  for (;;) {
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`phoenix did not start: ${String((await proc).all ?? '').slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  return {
    url,
    get: async (p) => {
      const r = await fetch(`${url}${p}`);
      if (!r.ok) throw new Error(`GET ${p}: ${r.status} ${await r.text()}`);
      return r.json();
    },
    stop: async () => {
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await proc;
      clearTimeout(t);
    },
  };
}
