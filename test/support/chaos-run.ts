import { execa, type ResultPromise } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BIN } from '../helpers.js';
import { invariants } from './chaos-invariants.js';
import {
  acknowledged,
  fillDisk,
  holdLock,
  jumpableClock,
  jumpClock,
  killTrainer,
  leakedTemps,
  look,
  lost,
  ownFileSystem,
  projectProcesses,
  releaseFileSystem,
  rng,
  type Acknowledged,
  type BackendFaults,
} from './chaos.js';

/**
 * The project's config made ready for the fire: a hung call given up after 3 s, not the project's 20; a candidate
 * that passes deployed as a staged canary ([0.5, 1.0]) that review advances to production when its gates pass on
 * `minRollouts` rollouts (so the canary's stages are hit); then the scenario's own replacements.
 */
export function underFire(dir: string, minRollouts: number, more: [string, string][] = []): void {
  const file = path.join(dir, 'massgen-rl.yaml');
  const edits: [string, string][] = [
    ['agent_timeout_s: 20', 'agent_timeout_s: 3'],
    ['deploy:\n', `deploy:\n  canary: { fraction: 0.5, min_rollouts: ${minRollouts} }\n  rollout: [0.5, 1.0]\n`],
    ...more,
  ];
  fs.writeFileSync(
    file,
    edits.reduce((text, [from, to]) => text.replace(from, to), fs.readFileSync(file, 'utf8')),
  );
}

/** How often each fault is drawn per start of the loop (see the chaos tests for what each one is). */
export interface Rates {
  kill: number;
  trainer: number;
  lock: number;
  backend: number;
  disk: number;
  clock: number;
}

/** The rates from CHAOS_KILL_RATE, CHAOS_TRAINER_RATE, … (default: 2/3 for kill, 0.3 for the rest). */
export function ratesFromEnv(env = process.env): Rates {
  const rate = (name: string, fallback: number) => Number(env[`CHAOS_${name}_RATE`] ?? fallback);
  return {
    kill: rate('KILL', 2 / 3),
    trainer: rate('TRAINER', 0.3),
    lock: rate('LOCK', 0.3),
    backend: rate('BACKEND', 0.3),
    disk: rate('DISK', 0.3),
    clock: rate('CLOCK', 0.3),
  };
}

/** What a scenario's own faults are handed for one start of the loop. */
export interface StartContext {
  random: () => number;
  /** A moment within the start, drawn over how long an uninterrupted start has taken (ms from its beginning). */
  at: () => number;
  /** How long an uninterrupted start has taken (ms). */
  typicalMs: number;
  running: () => boolean;
  /** The pid of this start's CLI. */
  pid: number | undefined;
  /** Counts a fault of this kind at the loop's stage now. */
  count: (kind: string) => void;
}

/** CHAOS_FAULTS: a run goes on past its cycles until at least this many faults were injected (default 0). */
export const MIN_FAULTS = Number(process.env.CHAOS_FAULTS ?? 0);

/** A chaos test's time limit: 4 minutes a cycle (and a cycle for every 3 faults asked for), at least 30. */
export const chaosTimeoutMs = (cycles: number) => Math.max(1_800_000, (cycles + MIN_FAULTS / 3) * 240_000);

export interface ChaosOptions {
  dir: string;
  /** Starts go on until this many cycles ended (completed or failed) and MIN_FAULTS faults were injected. */
  cycles: number;
  seed: number;
  /** ratesFromEnv() unless given. */
  rates?: Rates;
  backend: BackendFaults;
  /** The store's busy_timeout_ms in the project (locks are held past it). */
  busyMs: number;
  pgUrl?: string;
  /** The loop's environment (default: the stand-in trainer's steps 1 s apart). */
  env?: Record<string, string>;
  /** Before every start, with the clock's environment (null: no clock faults): e.g. a killed gateway started again. */
  beforeStart?: (clock: Record<string, string> | null) => Promise<void>;
  /** A scenario's own faults for one start: the promises of their injections. */
  faults?: (c: StartContext) => Promise<unknown>[];
  /**
   * Faults of the scenario's own on their own schedule over the whole run (e.g. a service killed now and then,
   * whether a start of the loop runs or not), until `over()`; awaited before atEnd.
   */
  background?: (c: { random: () => number; count: (kind: string) => void; over: () => boolean }) => Promise<unknown>;
  /** Checks of the scenario's own at the end (after the last start): the violations. */
  atEnd?: () => Promise<string[]>;
}

export interface ChaosOutcome {
  completed: number;
  failed: number;
  /** Faults injected, in all and by kind@stage. */
  injected: number;
  faults: Record<string, number>;
  violations: string[];
  endings: string[];
  /** Every cycle's status and state (JSON) as the store held them at the end. */
  cycles: { status: string; state: { outcome?: string; stages: Record<string, unknown> } }[];
}

/**
 * `loop --once` started again and again (as systemd would) until `cycles` cycles have ended, each start with the
 * faults drawn for it at seeded random moments, the invariants checked after every start and at the end.
 */
export async function runChaos(o: ChaosOptions): Promise<ChaosOutcome> {
  const { dir, pgUrl } = o;
  const rates = o.rates ?? ratesFromEnv();
  const random = rng(o.seed);
  const children: ResultPromise[] = [];
  const disk = rates.disk > 0 && !pgUrl && ownFileSystem(dir, 1024);
  if (rates.disk > 0 && !disk)
    console.log(`chaos: no disk faults (${pgUrl ? "the store's disk is PostgreSQL's" : 'no tmpfs can be mounted'})`);
  const clockSpec = path.join(path.dirname(dir), `${path.basename(dir)}-clock`);
  const clock = rates.clock > 0 ? jumpableClock(clockSpec) : null;
  if (rates.clock > 0 && !clock) console.log('chaos: no clock jumps (libfaketime, Debian faketime, is not installed)');
  const out: ChaosOutcome = {
    completed: 0,
    failed: 0,
    injected: 0,
    faults: {},
    violations: [],
    endings: [],
    cycles: [],
  };
  const stageNow = () => {
    try {
      return look(dir, (db) => db.value('SELECT step FROM loop_runs ORDER BY started_at DESC LIMIT 1'), pgUrl);
    } catch {
      return 'unknown'; // the disk full at that moment (another fault): a reader cannot open the store either
    }
  };
  const count = (kind: string) => {
    const key = `${kind}@${String(stageNow() ?? 'start')}`;
    out.faults[key] = (out.faults[key] ?? 0) + 1;
    out.injected++;
  };
  let typicalMs = 8000;
  let seen: Acknowledged = new Map();
  let suspects = { processes: new Map<number, string>(), temps: new Set<string>() };
  const maxStarts = Math.ceil((o.cycles / (1 - rates.kill)) * 4) + MIN_FAULTS;
  const endedCycles = () => out.completed + out.failed;
  let between = true; // the last start ended its cycle (a run stops between cycles, not in one)
  const more = () => endedCycles() < o.cycles || out.injected < MIN_FAULTS || !between;
  let over = false;
  let background: Promise<unknown> = Promise.resolve();
  try {
    for (let attempt = 0; more() && attempt < maxStarts; attempt++) {
      const started = Date.now();
      const endedBefore = endedCycles();
      // NTP set the clock right while the loop was down; a jump during a start stays until it ends
      if (clock) jumpClock(clockSpec, 0);
      await o.beforeStart?.(clock);
      if (attempt === 0 && o.background)
        background = o.background({ random: rng(o.seed + 1), count, over: () => over });
      const child = execa(process.execPath, [BIN, 'loop', '--once', '--json'], {
        cwd: dir,
        env: { NO_COLOR: '1', ...(o.env ?? { FAKE_TRAINER_STEP_S: '1' }), ...clock },
        reject: false,
      });
      children.push(child);
      let running = true;
      const c: StartContext = {
        random,
        at: () => 200 + random() * typicalMs,
        typicalMs,
        running: () => running,
        pid: child.pid,
        count,
      };
      const kill = random() < rates.kill ? c.at() : null;
      const injected = [...drawFaults({ ...o, rates }, c, { disk, clock, clockSpec }), ...(o.faults?.(c) ?? [])];
      const timer = kill === null ? undefined : setTimeout(() => child.kill('SIGKILL'), kill);
      const r = await child;
      running = false;
      clearTimeout(timer);
      await Promise.all(injected);
      if (r.signal === 'SIGKILL') count('cli_kill');
      else if (ended(r, attempt, out)) typicalMs = Date.now() - started;
      between = endedCycles() > endedBefore;
      const after = (v: string) => `after start ${attempt + 1}: ${v}`;
      out.violations.push(...invariants(dir, false, pgUrl).map(after));
      // Nothing the store acknowledged before is gone (what this start wrote counts from now on).
      const now = acknowledged(dir, pgUrl);
      if (now) {
        out.violations.push(...lost(seen, now).map(after));
        seen = now;
      }
      // What a killed start left behind (its trainer, a temporary file) may live until the next start ends, no longer.
      await sleep(300);
      const processes = projectProcesses(dir);
      const temps = new Set(leakedTemps(dir));
      for (const [pid, args] of processes)
        if (suspects.processes.get(pid) === args) out.violations.push(after(`orphan ${pid} ${args}`));
      for (const t of temps) if (suspects.temps.has(t)) out.violations.push(after(`leaked ${t}`));
      suspects = { processes, temps };
    }
    over = true;
    await background;
    out.violations.push(...(await (o.atEnd?.() ?? Promise.resolve([]))));
    out.violations.push(...invariants(dir, true, pgUrl));
    const rows = look(dir, (db) => db.values("SELECT status || ' ' || state FROM loop_runs"), pgUrl) ?? [];
    out.cycles = rows.map((row) => {
      const [status, ...state] = String(row).split(' ');
      return { status: status!, state: JSON.parse(state.join(' ')) as ChaosOutcome['cycles'][number]['state'] };
    });
  } finally {
    over = true;
    for (const c of children) c.kill('SIGKILL');
    releaseFileSystem(dir);
    fs.rmSync(clockSpec, { force: true });
  }
  const stages = (c: ChaosOutcome['cycles'][number]) =>
    Object.entries(c.state.stages)
      .map(([stage, r]) => {
        const { status, detail, action } = r as { status?: string; detail?: string; action?: string };
        return `${stage} ${status ?? '?'}${detail ? ` (${detail})` : ''}${action ? ` (${action})` : ''}`;
      })
      .join(', ');
  console.log(
    `chaos: ${out.completed} cycle(s) completed, ${out.failed} failed; ${out.injected} fault(s) by kind@stage `
      + `${JSON.stringify(out.faults)}; violations ${out.violations.length}\n  starts that gave up: `
      + `${out.endings.join('\n  ')}\n  cycles: `
      + out.cycles.map((c) => `${c.status} (${stages(c)}): ${c.state.outcome ?? ''}`).join('\n  '),
  );
  return out;
}

/** How a start that was not killed ended: true for a completed cycle; violations for a crash or a silent failure. */
function ended(r: { stdout: unknown; stderr: unknown; exitCode?: number }, attempt: number, out: ChaosOutcome) {
  const stderr = String(r.stderr);
  if (/please report/i.test(stderr)) out.violations.push(`start ${attempt + 1} crashed: ${stderr.slice(0, 800)}`);
  let json: { status: string; outcome?: string } | null = null;
  try {
    json = JSON.parse(String(r.stdout)) as { status: string; outcome?: string };
  } catch {
    // not a cycle's JSON: a refusal to start (exit 2) or a crash
  }
  if (json?.status === 'completed') {
    out.completed++;
    return true;
  }
  if (json?.status === 'failed') {
    out.failed++;
    out.endings.push(`failed: ${String(json.outcome).slice(0, 60)}`);
    if (!json.outcome) out.violations.push(`start ${attempt + 1}: a failed cycle without its reason`);
  } else if (r.exitCode === 2) out.endings.push(`exit 2: ${stderr.trim().split('\n').at(-1)?.slice(0, 60)}`);
  else if (r.exitCode !== 130)
    out.violations.push(`start ${attempt + 1} ended with exit ${r.exitCode}: ${stderr.slice(-400)}`);
  return false;
}

/** The faults common to every scenario, drawn for one start (the CLI's own kill is drawn by the caller). */
function drawFaults(
  o: ChaosOptions & { rates: Rates },
  c: StartContext,
  env: { disk: boolean; clock: Record<string, string> | null; clockSpec: string },
): Promise<unknown>[] {
  const { rates, backend, dir } = o;
  const { random, at, count } = c;
  const injected: Promise<unknown>[] = [];
  const later = (ms: number, fn: () => unknown) => sleep(ms).then(() => (c.running() ? fn() : undefined));
  if (random() < rates.trainer) {
    const after = random() * 1500;
    injected.push(killTrainer(dir, c.typicalMs * 2, after, c.running).then((k) => k && count('trainer_kill')));
  }
  // the store's lock, the backend and the disk may fail several times in one start (up to 4): each another draw
  for (let n = 0; !o.pgUrl && n < 4 && random() < rates.lock; n++) {
    const when = at();
    // past busy_timeout_ms always, past what writers retry for (4 × it) about half the time
    const hold = o.busyMs + 200 + random() * 6 * o.busyMs;
    injected.push(
      later(when, async () => {
        const holder = await holdLock(dir, hold);
        if (!holder) return;
        count('store_locked');
        await holder.released;
      }),
    );
  }
  for (let n = 0; n < 4 && random() < rates.backend; n++) {
    const when = at();
    const kind = (['refuse', 'hang', 'down'] as const)[Math.floor(random() * 3)]!;
    const ms = 500 + random() * 2000;
    injected.push(
      later(when, () => {
        backend[`${kind}Until`] = Date.now() + ms;
        count(`backend_${kind}`);
      }),
    );
  }
  for (let n = 0; env.disk && n < 4 && random() < rates.disk; n++) {
    const when = at();
    const ms = 300 + random() * 2000;
    injected.push(
      later(when, async () => {
        count('disk_full');
        const free = fillDisk(dir);
        await sleep(ms);
        free();
      }),
    );
  }
  if (env.clock && random() < rates.clock) {
    const when = at();
    // forward or back, a minute to two hours: past leases' and locks' lifetimes either way
    const seconds = (random() < 0.5 ? -1 : 1) * (60 + random() * 7140);
    injected.push(
      later(when, () => {
        count(seconds < 0 ? 'clock_back' : 'clock_forward');
        jumpClock(env.clockSpec, seconds);
      }),
    );
  }
  return injected;
}
