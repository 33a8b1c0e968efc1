import Database from 'better-sqlite3';
import { execa } from 'execa';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SyncPgConnection } from '../../src/store/postgres/bridge.js';
import { jsonText } from '../../src/store/sql.js';
import { Rng } from '../../src/tasks/prng.js';
import { FIXTURES } from '../helpers.js';
import type { Script } from './scripted-server.js';

/** The harness's own seeded draws (which start gets which fault, and when). */
export function rng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.next();
}

export const storeFile = (dir: string) => path.join(dir, '.massgen-rl', 'store.sqlite');

/** A read-only look at a store while a loop may be writing it: SQL run as it is, first columns as values. */
export interface Reader {
  dialect: 'sqlite' | 'postgres';
  /** The first column of every row. */
  values(sql: string): unknown[];
  /** The first column of the first row. */
  value(sql: string): unknown;
}

/**
 * A read-only look at the project's store (its SQLite file in `dir`, or the PostgreSQL database `pgUrl`);
 * undefined before the store exists or while it migrates.
 */
export function look<T>(dir: string, fn: (db: Reader) => T, pgUrl?: string): T | undefined {
  if (pgUrl) {
    const conn = new SyncPgConnection({ connectionString: pgUrl }, 60_000);
    const values = (sql: string) => conn.query({ sql, params: [], array: true }).rows.map((r) => (r as unknown[])[0]);
    try {
      return fn({ dialect: 'postgres', values, value: (sql) => values(sql)[0] });
    } catch (err) {
      return notYet(err);
    } finally {
      conn.close();
    }
  }
  if (!fs.existsSync(storeFile(dir))) return undefined;
  const db = new Database(storeFile(dir), { readonly: true, fileMustExist: true, timeout: 30_000 });
  const values = (sql: string) => db.prepare(sql).pluck().all();
  try {
    return fn({ dialect: 'sqlite', values, value: (sql) => db.prepare(sql).pluck().get() });
  } catch (err) {
    return notYet(err);
  } finally {
    db.close();
  }
}

/** undefined for a store that is not there yet (its tables being made); any other error is the check's to report. */
function notYet(err: unknown): undefined {
  if (/no such table|does not exist|database .* is locked|could not connect/i.test(String(err))) return undefined;
  throw err;
}

/**
 * The backend's faults: while `refuseUntil` lies ahead every call gets a 503, while `hangUntil` no reply, while
 * `downUntil` its connection is cut (a model server killed, until it is started again).
 */
export interface BackendFaults {
  refuseUntil: number;
  hangUntil: number;
  downUntil: number;
}

/** The script with the faults in front of it. */
export function faultyBackend(script: Script, faults: BackendFaults): Script {
  return (req, i) => {
    const now = Date.now();
    if (now < faults.refuseUntil) return { status: 503, body: { error: { message: 'chaos: overloaded' } } };
    if (now < faults.hangUntil) return { hang: true };
    if (now < faults.downUntil) return { destroy: true };
    return script(req, i);
  };
}

/** Processes whose command line names the project directory (its trainers, servers and CLIs), as pid → args. */
export function projectProcesses(dir: string): Map<number, string> {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  const found = new Map<number, string>();
  for (const line of out.split('\n')) {
    const m = /^\s*(\d+)\s+(.*)$/.exec(line);
    if (m && m[2]!.includes(dir) && Number(m[1]) !== process.pid && !m[2]!.startsWith('ps ')) {
      found.set(Number(m[1]), m[2]!);
    }
  }
  return found;
}

/** Waits for a trainer of the project (the stand-in or a bundled one) to start (up to `withinMs`), kills it with SIGKILL `afterMs` later. */
export async function killTrainer(dir: string, withinMs: number, afterMs: number, alive: () => boolean) {
  const until = Date.now() + withinMs;
  while (Date.now() < until && alive()) {
    const trainer = [...projectProcesses(dir)].find(([, args]) =>
      /protocol_trainer\.py|massgen_rl_training\./.test(args),
    );
    if (trainer) {
      await sleep(afterMs);
      try {
        process.kill(trainer[0], 'SIGKILL');
        return true;
      } catch {
        return false; // it finished first
      }
    }
    await sleep(100);
  }
  return false;
}

/**
 * Another process holds the store's write lock for `ms` (BEGIN EXCLUSIVE); resolves once it has it, with its exit
 * (wrapped: an async function returning the process itself would wait for it to exit).
 */
export async function holdLock(dir: string, ms: number): Promise<{ released: Promise<unknown> } | null> {
  if (!fs.existsSync(storeFile(dir))) return null;
  const child = execa(process.execPath, [path.join(FIXTURES, 'hold-lock.mjs'), storeFile(dir), String(ms)], {
    reject: false,
  });
  const locked = await new Promise<boolean>((resolve) => {
    child.stdout?.on('data', (d: Buffer) => String(d).includes('locked') && resolve(true));
    void child.then(() => resolve(false));
  });
  return locked ? { released: child.then(() => undefined) } : null;
}

/** Temporary files of writes that never reached their rename, anywhere in the project. */
export function leakedTemps(dir: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (/\.tmp-\d+$|\.tmp$|^\.tmp-/.test(e.name)) found.push(path.relative(dir, p));
      else if (e.isDirectory() && e.name !== 'node_modules') walk(p);
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return found;
}

/** What the store has acknowledged, by kind: keys that must still be there at every later look. */
export type Acknowledged = Map<string, Set<string>>;

const ACKNOWLEDGED: Record<string, (db: Reader) => string> = {
  // a completed rollout with its span count: spans may be added to it later, never lost
  rollout: () => `SELECT r.id || ':' || (SELECT COUNT(*) FROM spans s WHERE s.rollout_id = r.id) FROM rollouts r
    WHERE status = 'completed'`,
  reward: () => 'SELECT id FROM rewards',
  checkpoint: () => 'SELECT id FROM checkpoints',
  'evaluation result': () =>
    "SELECT serving_hash || '/' || task_hash || '/' || seed || '/' || settings_hash FROM eval_results",
  audit: () => 'SELECT id FROM audit',
  // a cycle that ended, with its outcome; one taken up again keeps the outcome among its earlier attempts
  // (a cycle whose process died has the error the next process to open the store wrote, until it is taken up)
  'cycle outcome': (db) => `SELECT id || ': ' || COALESCE(${jsonText(db, 'state', 'outcome')}, error) FROM loop_runs
    WHERE status IN ('completed', 'failed', 'cancelled')
    UNION SELECT r.id || ': ' || ${
      db.dialect === 'postgres'
        ? "(e.value ->> 'outcome') FROM loop_runs r, jsonb_array_elements(r.state::jsonb -> 'earlier') e(value)"
        : "json_extract(e.value, '$.outcome') FROM loop_runs r, json_each(r.state, '$.earlier') e"
    }`,
};

/** Every acknowledged key now in the store (undefined before it exists). */
export function acknowledged(dir: string, pgUrl?: string): Acknowledged | undefined {
  return look(
    dir,
    (db) => {
      const found: Acknowledged = new Map();
      for (const [kind, sql] of Object.entries(ACKNOWLEDGED)) found.set(kind, new Set(db.values(sql(db)).map(String)));
      return found;
    },
    pgUrl,
  );
}

/** What `before` acknowledged and `now` lacks, as messages (a rollout that gained spans is still there). */
export function lost(before: Acknowledged, now: Acknowledged): string[] {
  const out: string[] = [];
  for (const [kind, keys] of before) {
    const present = now.get(kind) ?? new Set<string>();
    const rollouts = kind === 'rollout' ? spanCounts(present) : null;
    for (const key of keys) {
      if (present.has(key)) continue;
      if (rollouts) {
        const [id, spans] = splitCount(key);
        if ((rollouts.get(id) ?? -1) >= spans) continue;
      }
      out.push(`${kind} ${key} lost`);
    }
  }
  return out;
}

function splitCount(key: string): [string, number] {
  const at = key.lastIndexOf(':');
  return [key.slice(0, at), Number(key.slice(at + 1))];
}

function spanCounts(keys: Set<string>): Map<string, number> {
  return new Map([...keys].map(splitCount));
}

const dataDir = (dir: string) => path.join(dir, '.massgen-rl');

/**
 * The project's data directory on a file system of its own (a tmpfs of `mb` MiB), which fillDisk can fill; false
 * where this machine lets no test mount one (not root), and the run goes on without disk faults.
 */
export function ownFileSystem(dir: string, mb: number): boolean {
  fs.mkdirSync(dataDir(dir), { recursive: true });
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${mb}m`, 'tmpfs', dataDir(dir)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export function releaseFileSystem(dir: string): void {
  try {
    execFileSync('umount', ['-l', dataDir(dir)], { stdio: 'ignore' });
  } catch {
    // not mounted
  }
}

/** Takes every free byte of the data directory's file system with a ballast file; returns what frees them. */
export function fillDisk(dir: string): () => void {
  const ballast = path.join(dataDir(dir), 'chaos-ballast');
  const fd = fs.openSync(ballast, 'w');
  try {
    for (const size of [1 << 20, 4096, 1]) {
      const chunk = Buffer.alloc(size);
      for (;;) {
        try {
          fs.writeSync(fd, chunk);
        } catch {
          break; // ENOSPC at this size: go on with a smaller one
        }
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  return () => fs.rmSync(ballast, { force: true });
}

const FAKETIME_LIB = ['/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1', '/usr/lib/faketime/libfaketimeMT.so.1'];

/**
 * A machine clock the harness can jump: the environment that puts a process (and its children) on libfaketime
 * reading its offset from `specFile` every second, the monotonic clock left alone as an NTP step leaves it; null
 * where libfaketime (Debian `faketime`) is not installed.
 */
export function jumpableClock(specFile: string): Record<string, string> | null {
  const lib = FAKETIME_LIB.find((f) => fs.existsSync(f));
  if (!lib) return null;
  fs.writeFileSync(specFile, '+0\n');
  return {
    LD_PRELOAD: lib,
    FAKETIME_TIMESTAMP_FILE: specFile,
    FAKETIME_CACHE_DURATION: '1',
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  };
}

/** Steps the clock by `seconds` (negative: back) for every process on it. */
export function jumpClock(specFile: string, seconds: number): void {
  fs.writeFileSync(specFile, `${seconds >= 0 ? '+' : ''}${Math.round(seconds)}\n`);
}
