import Database from 'better-sqlite3';
import { execa, type ResultPromise } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { openStore } from '../../src/runtime/store.js';
import { storeDb } from '../../src/store/store.js';
import { BIN, FIXTURES, hasStack, runCli, sqliteOf } from '../helpers.js';
import { adapterScript, loopProject, type LoopProject } from '../support/loop-project.js';

// The loop as a user runs it, in real processes: killed with SIGKILL in each stage and started again,
// two cycles at once, and the production switch under SIGKILL.
let project: LoopProject | undefined;
const children: ResultPromise[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  await project?.server.close();
  project = undefined;
});

const env = { NO_COLOR: '1', FAKE_TRAINER_STEP_S: '1' };

function startLoop(dir: string): ResultPromise {
  const child = execa(process.execPath, [BIN, 'loop', '--once', '--json'], {
    cwd: dir,
    env,
    reject: false,
    stdin: 'ignore',
  });
  children.push(child);
  return child;
}

/** Polls the store (read-only) until the newest cycle is at `step`, then returns. */
async function waitForStep(dir: string, step: string, timeoutMs = 120_000): Promise<void> {
  const file = path.join(dir, '.massgen-rl', 'store.sqlite');
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (fs.existsSync(file)) {
      const db = new Database(file, { readonly: true, fileMustExist: true });
      try {
        const row = db.prepare('SELECT step, status FROM loop_runs ORDER BY started_at DESC LIMIT 1').get() as
          { step: string | null; status: string } | undefined;
        if (row?.step === step && row.status === 'running') return;
      } catch {
        // not migrated yet
      } finally {
        db.close();
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the cycle never reached ${step}`);
}

describe('loop --once under kill -9', () => {
  it.each(['collect', 'train', 'eval', 'deploy'])(
    'resumes a cycle killed in %s at that stage, trains once and deploys only what it evaluated',
    async (stage) => {
      // Adapter loads take a second, so the deploy stage (which loads the promoted adapter) can be caught too.
      project = await loopProject(adapterScript({ delayMs: 150 }), '', { loraDelayMs: 1000 });
      const dir = project.dir;
      const a = startLoop(dir);
      await waitForStep(dir, stage);
      await new Promise((r) => setTimeout(r, 500));
      a.kill('SIGKILL');
      await a;

      const b = await runCli(['loop', '--once', '--json'], { cwd: dir, env, timeoutMs: 300_000 });
      expect(hasStack(b.stderr), b.stderr).toBe(false);
      expect(b.exitCode, b.stderr).toBe(0);
      const r = JSON.parse(b.stdout) as {
        status: string;
        resumed: boolean;
        cycle: number;
        outcome: string;
        stages: Record<string, { status: string }>;
      };
      // A kill before the first stage change was saved can leave nothing to resume; every later one resumes.
      expect(r).toMatchObject({ status: 'completed', cycle: 1, resumed: true });
      expect(r.outcome).toMatch(/^promoted/);

      const store = openStore(project.load());
      try {
        const completed = storeDb(store).prepare('SELECT COUNT(*) FROM checkpoints').pluck().get();
        expect(completed).toBe(1);
        const deploys = store.audit.list({ actions: ['deploy', 'force-deploy'] });
        expect(deploys).toHaveLength(1);
        const evals = store.evaluations.runs({ status: 'completed' });
        expect(deploys[0]!.evalRunId).toBe(evals.find((e) => e.candidateSet === deploys[0]!.afterSet)?.id);
        expect(sqliteOf(store).pragma('integrity_check', { simple: true })).toBe('ok');
      } finally {
        store.close();
      }
    },
    400_000,
  );

  it('lets one cycle run at a time across processes, and takes over the lock of a killed one', async () => {
    project = await loopProject(adapterScript({ delayMs: 200 }));
    const dir = project.dir;
    const a = startLoop(dir);
    await waitForStep(dir, 'collect');
    const b = await runCli(['loop', '--once'], { cwd: dir, env, timeoutMs: 60_000 });
    expect(b.exitCode).toBe(1);
    expect(b.stderr).toMatch(new RegExp(`another cycle is running: process ${a.pid} on `));
    expect(hasStack(b.stderr)).toBe(false);
    a.kill('SIGKILL');
    await a;
    const c = await runCli(['loop', '--once', '--json'], { cwd: dir, env, timeoutMs: 300_000 });
    expect(c.exitCode, c.stderr).toBe(0);
    expect(JSON.parse(c.stdout)).toMatchObject({ status: 'completed', resumed: true });
  }, 400_000);
});

describe('loop on its schedule', () => {
  it('starts cycles on loop.schedule in the foreground, shows them in loop status, and stops cleanly on SIGTERM', async () => {
    project = await loopProject();
    const dir = project.dir;
    const child = execa(process.execPath, [BIN, 'loop', '--set', 'loop.schedule=*/2 * * * * *'], {
      cwd: dir,
      env,
      reject: false,
      stdin: 'ignore',
    });
    children.push(child);
    const file = path.join(dir, '.massgen-rl', 'store.sqlite');
    const until = Date.now() + 120_000;
    let completed = 0;
    while (Date.now() < until && completed < 2) {
      await new Promise((r) => setTimeout(r, 500));
      if (!fs.existsSync(file)) continue;
      const db = new Database(file, { readonly: true, fileMustExist: true });
      try {
        completed = db.prepare("SELECT COUNT(*) FROM loop_runs WHERE status = 'completed'").pluck().get() as number;
      } catch {
        // not migrated yet
      } finally {
        db.close();
      }
    }
    expect(completed).toBeGreaterThanOrEqual(2);
    const status = await runCli(['loop', 'status', '--json', '--set', 'loop.schedule=*/2 * * * * *'], {
      cwd: dir,
      env,
    });
    expect(JSON.parse(status.stdout)).toMatchObject({
      schedule: '*/2 * * * * *',
      next: expect.any(Array),
      cycles: expect.arrayContaining([expect.objectContaining({ status: 'completed' })]),
    });
    child.kill('SIGTERM');
    const r = await child;
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toMatch(/next cycle at /);
    expect(hasStack(r.stderr)).toBe(false);
  }, 180_000);
});

describe('the production switch under kill -9', () => {
  it('leaves production on the old set or the new one, never a mix', async () => {
    project = await loopProject();
    const loaded = project.load();
    const store = openStore(loaded);
    const dataDir = loaded.paths.dataDir;
    const { withRuntime } = await import('../../src/runtime/runtime.js');
    const first = await withRuntime(loaded, (rt) => syncProduction(rt));
    const prompt = store.resources.add({
      kind: 'prompt',
      name: 'solver',
      content: 'Be careful.',
      metadata: { source: 'manual' },
    });
    const other = store.sets.add(
      {
        agents: Object.fromEntries(
          Object.entries(first.members.agents).map(([id, m]) => [id, { ...m, prompt: prompt.id }]),
        ),
      },
      { kind: 'manual' },
    );
    store.close();
    for (let i = 0; i < 12; i++) {
      const child = execa(
        process.execPath,
        [path.join(FIXTURES, 'switch-production.mjs'), loaded.paths.storePath, dataDir, first.id, other.id],
        { reject: false, buffer: false },
      );
      children.push(child);
      await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
      await new Promise((r) => setTimeout(r, 20 + ((i * 37) % 150)));
      child.kill('SIGKILL');
      await child;
      const s = openStore(loaded);
      try {
        const current = s.sets.get(s.sets.pointer('production')!.setId)!;
        expect([first.id, other.id]).toContain(current.id);
        expect(s.resources.production('prompt', 'solver')!.id).toBe(current.members.agents.a!.prompt);
        expect(s.audit.list({ limit: 1 })[0]!.afterSet).toBe(current.id);
        const file = JSON.parse(fs.readFileSync(path.join(dataDir, 'production.json'), 'utf8')) as {
          set: { id: string };
        };
        expect([first.id, other.id]).toContain(file.set.id);
        expect(sqliteOf(s).pragma('integrity_check', { simple: true })).toBe('ok');
      } finally {
        s.close();
      }
    }
  }, 120_000);
});
