import Database from 'better-sqlite3';
import { execa } from 'execa';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Rng } from '../../src/tasks/prng.js';
import { FIXTURES } from '../helpers.js';
import type { Script } from './scripted-server.js';

/** The harness's own seeded draws (which start gets which fault, and when). */
export function rng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.next();
}

export const storeFile = (dir: string) => path.join(dir, '.massgen-rl', 'store.sqlite');

/** A read-only look at the store file (while a loop may be writing it); undefined before it exists or migrates. */
export function look<T>(dir: string, fn: (db: Database.Database) => T): T | undefined {
  if (!fs.existsSync(storeFile(dir))) return undefined;
  const db = new Database(storeFile(dir), { readonly: true, fileMustExist: true, timeout: 30_000 });
  try {
    return fn(db);
  } catch {
    return undefined;
  } finally {
    db.close();
  }
}

/** The backend's faults: while `refuseUntil` lies ahead every call gets a 503, while `hangUntil` does no reply. */
export interface BackendFaults {
  refuseUntil: number;
  hangUntil: number;
}

/** The script with the faults in front of it. */
export function faultyBackend(script: Script, faults: BackendFaults): Script {
  return (req, i) => {
    const now = Date.now();
    if (now < faults.refuseUntil) return { status: 503, body: { error: { message: 'chaos: overloaded' } } };
    if (now < faults.hangUntil) return { hang: true };
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

/** Waits for a trainer of the project to start (up to `withinMs`), kills it with SIGKILL `afterMs` later. */
export async function killTrainer(dir: string, withinMs: number, afterMs: number, alive: () => boolean) {
  const until = Date.now() + withinMs;
  while (Date.now() < until && alive()) {
    const trainer = [...projectProcesses(dir)].find(([, args]) => args.includes('protocol_trainer.py'));
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
