import { execa, type ResultPromise } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { jsonText } from '../../src/store/sql.js';
import { BIN } from '../helpers.js';
import {
  acknowledged,
  faultyBackend,
  fillDisk,
  jumpableClock,
  jumpClock,
  holdLock,
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
} from '../support/chaos.js';
import { adapterScript, loopProject, type LoopProject } from '../support/loop-project.js';
import { freshPostgresUrl } from '../support/postgres.js';

// The loop under fire (issue 47): `loop --once` on a scripted backend, started again after every fault as systemd
// would, with the store's invariants checked after every start and at the end. Each start draws its faults, at
// seeded random moments: the CLI killed with SIGKILL (CHAOS_KILL_RATE, 2/3); the trainer killed (CHAOS_TRAINER_RATE,
// 0.3); the store's write lock held past store.busy_timeout_ms by another process (CHAOS_LOCK_RATE, 0.3); the
// backend refusing (503), hanging, or down, its connections cut as a killed model server's are until it is started
// again (CHAOS_BACKEND_RATE, 0.3); the data directory's file system full for a moment (CHAOS_DISK_RATE, 0.3; a tmpfs
// the harness mounts); the clock stepped a minute to two hours forward or back (CHAOS_CLOCK_RATE, 0.3; libfaketime).
// Locks, backend and disk faults may come several times a start (another draw at the rate, up to 4).
// CHAOS_CYCLES (2) cycles ended, CHAOS_SEED (47); `npm run chaos` runs 30.
const CYCLES = Number(process.env.CHAOS_CYCLES ?? 2);
const SEED = Number(process.env.CHAOS_SEED ?? 47);
const KILL_RATE = Number(process.env.CHAOS_KILL_RATE ?? 2 / 3);
const TRAINER_RATE = Number(process.env.CHAOS_TRAINER_RATE ?? 0.3);
const LOCK_RATE = Number(process.env.CHAOS_LOCK_RATE ?? 0.3);
const BACKEND_RATE = Number(process.env.CHAOS_BACKEND_RATE ?? 0.3);
const DISK_RATE = Number(process.env.CHAOS_DISK_RATE ?? 0.3);
const CLOCK_RATE = Number(process.env.CHAOS_CLOCK_RATE ?? 0.3);
const STORE = process.env.CHAOS_STORE ?? 'sqlite';
const BUSY_MS = 1000;
const env = { NO_COLOR: '1', FAKE_TRAINER_STEP_S: '1' };

/** The store's own consistency: rows that point at rows that are not there. */
const DANGLING: Record<string, string> = {
  'span(s) of no rollout':
    'SELECT COUNT(*) FROM spans s WHERE NOT EXISTS (SELECT 1 FROM rollouts r WHERE r.id = s.rollout_id)',
  'reward(s) of no rollout':
    'SELECT COUNT(*) FROM rewards w WHERE NOT EXISTS (SELECT 1 FROM rollouts r WHERE r.id = w.rollout_id)',
  'set pointer(s) to no set':
    'SELECT COUNT(*) FROM set_pointers p WHERE NOT EXISTS (SELECT 1 FROM resource_sets s WHERE s.id = p.set_id)',
  'checkpoint(s) of no training run': `SELECT COUNT(*) FROM checkpoints c WHERE c.training_run_id IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM training_runs t WHERE t.id = c.training_run_id)`,
};

/** What must hold after every fault: the violations found (empty when none). */
function invariants(dir: string, final: boolean, pgUrl?: string): string[] {
  return (
    look(
      dir,
      (db) => {
        const v: string[] = [];
        const n = (sql: string) => Number(db.value(sql));
        if (db.dialect === 'sqlite') {
          const integrity = db.value('PRAGMA integrity_check');
          if (integrity !== 'ok') v.push(`integrity_check: ${String(integrity)}`);
        }
        for (const [what, sql] of Object.entries(DANGLING)) if (n(sql)) v.push(`${n(sql)} ${what}`);
        // No task × seed × set measured twice by evaluations.
        const twice = db.values(
          `SELECT resource_set_id || ' ' || task_id || ' seed ' || ${jsonText(db, 'metadata', 'seed')} FROM rollouts
          WHERE source = 'eval' AND status = 'completed'
          GROUP BY resource_set_id, task_id, ${jsonText(db, 'metadata', 'seed')} HAVING COUNT(*) > 1`,
        );
        for (const t of twice) v.push(`measured more than once: ${String(t)}`);
        // Every completed evaluation rollout has its result.
        const orphan = n(`SELECT COUNT(*) FROM rollouts r WHERE source = 'eval' AND status = 'completed'
          AND NOT EXISTS (SELECT 1 FROM eval_results e WHERE e.rollout_id = r.id)`);
        if (orphan) v.push(`${orphan} completed evaluation rollout(s) without a result`);
        // Production is a set some audited action put there (or the first one, from the config).
        const production = db.value("SELECT set_id FROM set_pointers WHERE role = 'production'") as string | undefined;
        const first = db.value('SELECT id FROM resource_sets ORDER BY version LIMIT 1') as string;
        if (production && production !== first && !n(`SELECT COUNT(*) FROM audit WHERE after_set = '${production}'`))
          v.push(`production ${production} has no audit record`);
        // Every completed training run registered its checkpoint.
        const unregistered = n(`SELECT COUNT(*) FROM training_runs t WHERE status = 'completed'
          AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.training_run_id = t.id)`);
        if (unregistered) v.push(`${unregistered} completed training run(s) without a checkpoint`);
        // Cycles are numbered on, whatever the clock did.
        const reused = db.values(
          `SELECT ${jsonText(db, 'state', 'cycle')} FROM loop_runs GROUP BY ${jsonText(db, 'state', 'cycle')} HAVING COUNT(*) > 1`,
        );
        for (const c of reused) v.push(`cycle number ${String(c)} used twice`);
        if (final) {
          const open = n("SELECT COUNT(*) FROM loop_runs WHERE status = 'running'");
          if (open) v.push(`${open} cycle(s) still running at the end`);
        }
        return v;
      },
      pgUrl,
    ) ?? []
  );
}

describe('chaos: the loop under faults at random moments', () => {
  let project: LoopProject | undefined;
  let clockSpec = '';
  const children: ResultPromise[] = [];
  afterEach(async () => {
    for (const c of children) c.kill('SIGKILL');
    await project?.server.close();
    if (project) releaseFileSystem(project.dir);
    if (clockSpec) fs.rmSync(clockSpec, { force: true });
  });

  it(`${CYCLES} cycles end through faults at seeded random moments (seed ${SEED}) with every invariant held`, async () => {
    const random = rng(SEED);
    const backend: BackendFaults = { refuseUntil: 0, hangUntil: 0, downUntil: 0 };
    // CHAOS_STORE=postgres: the store a database on the test run's PostgreSQL server (its lock and disk not ours)
    const pgUrl = STORE === 'postgres' ? freshPostgresUrl() : undefined;
    project = await loopProject(
      faultyBackend(adapterScript({ delayMs: 100 }), backend),
      `store: { busy_timeout_ms: ${BUSY_MS}${pgUrl ? `, url: "${pgUrl}"` : ''} }`,
    );
    const dir = project.dir;
    const disk = DISK_RATE > 0 && !pgUrl && ownFileSystem(dir, 1024);
    if (DISK_RATE > 0 && !disk)
      console.log(
        `chaos: no disk faults (${pgUrl ? "the store's disk is the PostgreSQL server's" : 'this machine lets the test mount no tmpfs'})`,
      );
    clockSpec = path.join(path.dirname(dir), `${path.basename(dir)}-clock`);
    const clock = CLOCK_RATE > 0 ? jumpableClock(clockSpec) : null;
    if (CLOCK_RATE > 0 && !clock) console.log('chaos: no clock jumps (libfaketime, Debian faketime, is not installed)');
    // a hung call is given up after 3 s, not the project's 20; a candidate that passes is deployed as a canary on
    // half the collects, which review advances to production when its gates pass (so the canary's stages are hit)
    const yamlFile = path.join(dir, 'massgen-rl.yaml');
    fs.writeFileSync(
      yamlFile,
      fs
        .readFileSync(yamlFile, 'utf8')
        .replace('agent_timeout_s: 20', 'agent_timeout_s: 3')
        .replace('deploy:\n', 'deploy:\n  canary: { fraction: 0.5, min_rollouts: 2 }\n  rollout: [0.5, 1.0]\n'),
    );
    const faults: Record<string, number> = {};
    const stageNow = () => {
      try {
        return look(dir, (db) => db.value('SELECT step FROM loop_runs ORDER BY started_at DESC LIMIT 1'), pgUrl);
      } catch {
        return 'unknown'; // the disk full at that moment (another fault): a reader cannot open the store either
      }
    };
    const count = (kind: string) => {
      const key = `${kind}@${String(stageNow() ?? 'start')}`;
      faults[key] = (faults[key] ?? 0) + 1;
    };
    const violations: string[] = [];
    const ended = { completed: 0, failed: 0 };
    const endings: string[] = [];
    let typicalMs = 8000; // how long an uninterrupted start has taken, to draw moments over
    let seen: Acknowledged = new Map();
    let suspects = { processes: new Map<number, string>(), temps: new Set<string>() };
    const maxStarts = Math.ceil((CYCLES / (1 - KILL_RATE)) * 4);
    for (let attempt = 0; ended.completed + ended.failed < CYCLES && attempt < maxStarts; attempt++) {
      const started = Date.now();
      // NTP set the clock right while the loop was down; a jump during a start stays until it ends
      if (clock) jumpClock(clockSpec, 0);
      const child = execa(process.execPath, [BIN, 'loop', '--once', '--json'], {
        cwd: dir,
        env: { ...env, ...clock },
        reject: false,
      });
      children.push(child);
      let running = true;
      const at = () => 200 + random() * typicalMs;
      const injected: Promise<unknown>[] = [];
      const kill = random() < KILL_RATE ? at() : null;
      const timer = kill === null ? undefined : setTimeout(() => child.kill('SIGKILL'), kill);
      if (random() < TRAINER_RATE) {
        const after = random() * 1500;
        injected.push(killTrainer(dir, typicalMs * 2, after, () => running).then((k) => k && count('trainer_kill')));
      }
      // the store's lock, the backend and the disk may fail several times in one start (up to 4): each another draw
      for (let n = 0; !pgUrl && n < 4 && random() < LOCK_RATE; n++) {
        const when = at();
        // past busy_timeout_ms always, past what writers retry for (4 × it) about half the time
        const hold = BUSY_MS + 200 + random() * 6 * BUSY_MS;
        injected.push(
          sleep(when).then(async () => {
            if (!running) return;
            const holder = await holdLock(dir, hold);
            if (holder) {
              count('store_locked');
              await holder.released;
            }
          }),
        );
      }
      for (let n = 0; n < 4 && random() < BACKEND_RATE; n++) {
        const when = at();
        const kind = (['refuse', 'hang', 'down'] as const)[Math.floor(random() * 3)]!;
        const ms = 500 + random() * 2000;
        injected.push(
          sleep(when).then(() => {
            if (!running) return;
            backend[`${kind}Until`] = Date.now() + ms;
            count(`backend_${kind}`);
          }),
        );
      }
      for (let n = 0; disk && n < 4 && random() < DISK_RATE; n++) {
        const when = at();
        const ms = 300 + random() * 2000;
        injected.push(
          sleep(when).then(async () => {
            if (!running) return;
            count('disk_full');
            const free = fillDisk(dir);
            await sleep(ms);
            free();
          }),
        );
      }
      if (clock && random() < CLOCK_RATE) {
        const when = at();
        // forward or back, a minute to two hours: past leases' and locks' lifetimes either way
        const seconds = (random() < 0.5 ? -1 : 1) * (60 + random() * 7140);
        injected.push(
          sleep(when).then(() => {
            if (!running) return;
            count(seconds < 0 ? 'clock_back' : 'clock_forward');
            jumpClock(clockSpec, seconds);
          }),
        );
      }
      const r = await child;
      running = false;
      clearTimeout(timer);
      await Promise.all(injected);
      if (r.signal === 'SIGKILL') count('cli_kill');
      else {
        const stderr = String(r.stderr);
        if (/please report/i.test(stderr)) violations.push(`start ${attempt + 1} crashed: ${stderr.slice(0, 800)}`);
        const out = (() => {
          try {
            return JSON.parse(String(r.stdout)) as { status: string; outcome?: string };
          } catch {
            return null;
          }
        })();
        if (out?.status === 'completed') {
          ended.completed++;
          typicalMs = Date.now() - started;
        } else if (out?.status === 'failed') {
          ended.failed++;
          endings.push(`failed: ${String(out.outcome).slice(0, 60)}`);
          if (!out.outcome) violations.push(`start ${attempt + 1}: a failed cycle without its reason`);
        } else if (r.exitCode === 2) {
          endings.push(`exit 2: ${stderr.trim().split('\n').at(-1)?.slice(0, 60)}`);
        } else if (r.exitCode !== 130) {
          violations.push(`start ${attempt + 1} ended with exit ${r.exitCode}: ${stderr.slice(-400)}`);
        }
      }
      violations.push(...invariants(dir, false, pgUrl).map((v) => `after start ${attempt + 1}: ${v}`));
      // Nothing the store acknowledged before is gone (what this start wrote counts from now on).
      const now = acknowledged(dir, pgUrl);
      if (now) {
        violations.push(...lost(seen, now).map((v) => `after start ${attempt + 1}: ${v}`));
        seen = now;
      }
      // What a killed start left behind (its trainer, a temporary file) may live until the next start ends, no longer.
      await sleep(300);
      const processes = projectProcesses(dir);
      const temps = new Set(leakedTemps(dir));
      for (const [pid, args] of processes)
        if (suspects.processes.get(pid) === args) violations.push(`after start ${attempt + 1}: orphan ${pid} ${args}`);
      for (const t of temps) if (suspects.temps.has(t)) violations.push(`after start ${attempt + 1}: leaked ${t}`);
      suspects = { processes, temps };
    }
    violations.push(...invariants(dir, true, pgUrl));
    const total = Object.values(faults).reduce((a, b) => a + b, 0);
    console.log(
      `chaos: ${ended.completed} cycle(s) completed, ${ended.failed} failed; ${total} fault(s) by kind@stage `
        + `${JSON.stringify(faults)}; violations ${violations.length}\n  starts that gave up: ${endings.join('\n  ')}`,
    );
    expect(violations).toEqual([]);
    expect(ended.completed + ended.failed).toBe(CYCLES);
    const outcomes = look(
      dir,
      (db) =>
        db.values(`SELECT ${jsonText(db, 'state', 'outcome')} FROM loop_runs WHERE status IN ('completed', 'failed')`),
      pgUrl,
    );
    expect(outcomes?.every((o) => typeof o === 'string' && o.length > 0)).toBe(true);
  }, 1_800_000);
});
