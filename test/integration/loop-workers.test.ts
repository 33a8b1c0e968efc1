import { execa, type ResultPromise } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { runCycle } from '../../src/pipeline/loop/loop.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { storeDb } from '../../src/store/store.js';
import { BIN } from '../helpers.js';
import { loopProject, type LoopProject } from '../support/loop-project.js';
import { freshPostgresUrl } from '../support/postgres.js';

let project: LoopProject | undefined;
let workers: ResultPromise[] = [];
afterEach(async () => {
  for (const w of workers) w.kill('SIGKILL');
  await Promise.allSettled(workers);
  workers = [];
  await project?.server.close();
  project = undefined;
});

describe('loop on a coordinator, orchestrations on collect workers', () => {
  it('a cycle whose collect and eval stages ran on two worker processes promotes the better candidate', async () => {
    project = await loopProject(undefined, `store: { url: "${freshPostgresUrl()}" }\nqueue: { distributed: true }\n`);
    const loaded = project.load();
    // The store exists before the workers start (they would create it too; this keeps the test's order plain).
    openStore(loaded).close();
    workers = [0, 1].map(() =>
      execa(process.execPath, [BIN, 'collect', '--worker', '--wait', '--concurrency', '2'], {
        cwd: project!.dir,
        reject: false,
        stdin: 'ignore',
        env: { NO_COLOR: '1' },
      }),
    );
    const notes: string[] = [];
    const r = await withRuntime(loaded, (rt) => runCycle(rt, { onStage: (_stage, m) => notes.push(m) }));
    expect(r.outcome).toMatch(/^promoted/);
    expect(r.stages.collect).toMatchObject({ status: 'done', tasks: 4, completed: 4, on_workers: true });
    expect(r.stages.eval).toMatchObject({ status: 'done', passed: true });
    expect(notes.some((n) => /queued for the workers/.test(n))).toBe(true);
    const store = openStore(loaded);
    try {
      const pids = new Set(workers.map((w) => w.pid));
      const rows = storeDb(store).prepare('SELECT source, pid FROM rollouts').all() as {
        source: string;
        pid: number | null;
      }[];
      expect(rows.filter((x) => x.source === 'collect')).toHaveLength(4);
      expect(rows.filter((x) => x.source === 'eval')).toHaveLength(16);
      // Every orchestration ran in a worker: none in this (coordinating) process.
      for (const row of rows) expect(pids.has(row.pid ?? -1), JSON.stringify(row)).toBe(true);
      expect(new Set(rows.map((x) => x.pid)).size).toBe(2);
      const evalRun = store.evaluations.run(String(r.stages.eval!.eval_run_id));
      expect(evalRun?.summary).toMatchObject({ measured: 0, reused: 16 });
    } finally {
      store.close();
    }
  }, 240_000);

  it("a worker whose config differs from the coordinator's refuses the evaluation jobs, which the coordinator then runs itself", async () => {
    project = await loopProject(
      undefined,
      `store: { url: "${freshPostgresUrl()}" }\nqueue: { distributed: true, retries: 1 }\n`,
    );
    const loaded = project.load();
    openStore(loaded).close();
    // orchestrator.total_timeout_s is part of the evaluation settings: this worker's results would not be comparable.
    const worker = execa(
      process.execPath,
      [BIN, '--json', '--set', 'orchestrator.total_timeout_s=61', 'collect', '--worker', '--wait'],
      { cwd: project.dir, reject: false, stdin: 'ignore', env: { NO_COLOR: '1' } },
    );
    workers = [worker];
    const r = await withRuntime(loaded, (rt) => runCycle(rt));
    expect(r.stages.collect).toMatchObject({ status: 'done', completed: 4, on_workers: true });
    expect(r.stages.eval).toMatchObject({ status: 'done' });
    worker.kill('SIGTERM');
    const out = await worker;
    expect(out.exitCode).toBe(130);
    // A stopped worker prints its summary, then the interruption (as an interrupted collect does).
    const [printed, stopped] = String(out.stdout).split('\n{"ok":false');
    expect(stopped).toMatch(/collect worker interrupted/);
    const summary = JSON.parse(printed!) as { completed: number; measured: number; refused: string[] };
    expect(summary).toMatchObject({ completed: 4, measured: 0 });
    expect(summary.refused.length).toBeGreaterThan(0);
    expect(summary.refused[0]).toMatch(/config differs from the evaluating machine's/);
    const store = openStore(loaded);
    try {
      const pids = storeDb(store)
        .prepare("SELECT DISTINCT pid FROM rollouts WHERE source = 'eval'")
        .pluck()
        .all() as number[];
      expect(pids).toEqual([process.pid]);
      expect(store.evaluations.run(String(r.stages.eval!.eval_run_id))?.summary).toMatchObject({
        measured: 16,
        reused: 0,
      });
    } finally {
      store.close();
    }
  }, 240_000);
});
