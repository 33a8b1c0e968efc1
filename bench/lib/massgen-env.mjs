// The real MassGen for the benchmarks: where its venv is (scripts/setup-massgen-venv.sh) and the environment every
// MassGen process runs in: offline, telemetry off, and bench/lib/massgen-site/sitecustomize.py on its path, which
// refuses (and appends to egressLog) any connection that leaves the machine.
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const LIB = path.dirname(fileURLToPath(import.meta.url));

export const MASSGEN_VENV =
  process.env.MASSGEN_VENV
  ?? process.env.MASSGEN_BENCH_VENV
  ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'massgen-rl', 'massgen-bench-venv');

/** A MassGen process's environment: its own HOME (and TMPDIR) under `home`; `extra` adds to it. */
export function massgenEnv(home, egressLog, extra = {}) {
  return {
    PATH: `${path.join(MASSGEN_VENV, 'bin')}:/usr/local/bin:/usr/bin:/bin`,
    HOME: home,
    TMPDIR: home,
    XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_CONFIG_HOME: path.join(home, '.config'),
    MASSGEN_BENCH_EGRESS_LOG: egressLog,
    NO_PROXY: '127.0.0.1,localhost',
    no_proxy: '127.0.0.1,localhost',
    HF_HUB_OFFLINE: '1',
    HF_DATASETS_OFFLINE: '1',
    TRANSFORMERS_OFFLINE: '1',
    LITELLM_LOCAL_MODEL_COST_MAP: 'True',
    MASSGEN_LOGFIRE_ENABLED: 'false',
    MEM0_TELEMETRY: 'False',
    ANONYMIZED_TELEMETRY: 'False',
    DO_NOT_TRACK: '1',
    LANGCHAIN_TRACING_V2: 'false',
    LANGSMITH_TRACING: 'false',
    LITELLM_TELEMETRY: 'False',
    GIT_PYTHON_REFRESH: 'quiet',
    PYTHONWARNINGS: 'ignore',
    PYTHONUNBUFFERED: '1',
    PYTHONPATH: path.join(LIB, 'massgen-site'),
    NO_COLOR: '1',
    TERM: 'dumb',
    ...extra,
  };
}
