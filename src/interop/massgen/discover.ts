import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../../errors.js';

/** One coordination to import: a turn directory, or one attempt directory of a turn that was restarted. */
export interface MassgenUnit {
  /** The log directory's name, e.g. log_20251104_191641_482913: with turn and attempt, the import key. */
  log: string;
  logDir: string;
  turn: number;
  /** null when the turn has no attempt_M subdirectories (restarts disabled). */
  attempt: number | null;
  /** The directory holding coordination_events.json and the agent snapshot directories. */
  dir: string;
  turnDir: string;
  /** The following attempt of the same turn, when this attempt was restarted. */
  nextAttemptDir: string | null;
}

export interface Discovery {
  root: string;
  logDirs: string[];
  units: MassgenUnit[];
}

const TURN = /^turn_(\d+)$/;
const ATTEMPT = /^attempt_(\d+)$/;

function subdirs(dir: string): string[] {
  try {
    return fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
  } catch {
    return [];
  }
}

const numbered = (names: string[], re: RegExp) =>
  names
    .flatMap((n) => {
      const m = re.exec(n);
      return m ? [{ name: n, n: Number(m[1]) }] : [];
    })
    .sort((a, b) => a.n - b.n);

const isLogDir = (dir: string) => numbered(subdirs(dir), TURN).length > 0;

/**
 * Finds MassGen log directories under dir: dir itself (a log_<timestamp> directory), the log
 * directories inside it (a massgen_logs directory), or <dir>/massgen_logs, <dir>/.massgen/massgen_logs.
 */
export function discoverMassgenLogs(dir: string): Discovery {
  const root = path.resolve(dir);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(root);
  } catch {
    throw new UserError(`--massgen-logs ${dir}: no such directory`);
  }
  if (!stat.isDirectory()) throw new UserError(`--massgen-logs ${dir}: not a directory`);

  let logDirs: string[] = [];
  if (isLogDir(root)) {
    logDirs = [root];
  } else {
    for (const candidate of [root, path.join(root, 'massgen_logs'), path.join(root, '.massgen', 'massgen_logs')]) {
      const found = subdirs(candidate)
        .sort()
        .map((n) => path.join(candidate, n))
        .filter(isLogDir);
      if (found.length) {
        logDirs = found;
        break;
      }
    }
  }
  if (!logDirs.length) {
    throw new UserError(
      `--massgen-logs ${dir}: no MassGen log directories found (expected log_<timestamp>/turn_N/ as MassGen writes under .massgen/massgen_logs/)`,
      'point it at .massgen/massgen_logs, at one log_<timestamp> directory, or at the project that holds .massgen/',
    );
  }

  const units: MassgenUnit[] = [];
  for (const logDir of logDirs) {
    for (const turn of numbered(subdirs(logDir), TURN)) {
      const turnDir = path.join(logDir, turn.name);
      const attempts = numbered(subdirs(turnDir), ATTEMPT);
      const base = { log: path.basename(logDir), logDir, turn: turn.n, turnDir };
      if (!attempts.length) {
        units.push({ ...base, attempt: null, dir: turnDir, nextAttemptDir: null });
        continue;
      }
      attempts.forEach((a, i) => {
        const next = attempts[i + 1];
        units.push({
          ...base,
          attempt: a.n,
          dir: path.join(turnDir, a.name),
          nextAttemptDir: next ? path.join(turnDir, next.name) : null,
        });
      });
    }
  }
  return { root, logDirs, units };
}
