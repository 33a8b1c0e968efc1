import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { runCycle } from '../../src/pipeline/loop/loop.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { STAGE_PROFILE } from '../../src/util/stage-profile.js';
import { runCli } from '../helpers.js';
import { loopProject, type LoopProject } from '../support/loop-project.js';

let project: LoopProject | undefined;
afterEach(async () => {
  await project?.server.close();
  project = undefined;
});

describe('the per-stage profile of a cycle', () => {
  it('is recorded with every stage, returned by loop status --json, tabled by loop status and the report', async () => {
    project = await loopProject();
    const loaded = project.load(['eval.report=true']);
    let collectCalls = 0;
    const r = await withRuntime(loaded, (rt) =>
      runCycle(rt, { onStage: (stage) => stage === 'review' && (collectCalls ||= project!.server.requests.length) }),
    );
    expect(r.status).toBe('completed');
    for (const stage of ['collect', 'review', 'train', 'eval', 'deploy'] as const) {
      const p = r.stages[stage]?.profile;
      expect(STAGE_PROFILE.parse(p), stage).toBeTruthy();
      expect(p!.wall_ms).toBeGreaterThanOrEqual(0);
      expect(p!.wall_ms).toBeLessThanOrEqual(r.stages[stage]!.finished_at! - r.stages[stage]!.started_at + 50);
    }
    const { collect, train, eval: ev } = r.stages;
    // four tasks through three agents on the scripted model, which reports 10 prompt tokens a call answered;
    // the calls an orchestration supersedes end unanswered
    const g = collect!.profile!.generation;
    expect(g.requests).toBeGreaterThanOrEqual(4 * 3);
    expect(g.prompt_tokens).toBe(10 * g.requests);
    expect(g.requests + g.unanswered).toBe(collectCalls);
    expect(collect!.profile!.generation.tokens_per_s).toBeGreaterThan(0);
    expect(collect!.profile!.store.writes).toBeGreaterThan(0);
    expect(collect!.profile!.training.steps).toBe(0);
    // the stand-in trainer takes 3 steps over its dataset, one epoch
    const store = openStore(loaded);
    const run = store.trainingRuns.get(train!.training_run_id!)!;
    store.close();
    const rows = (run.detail as { dataset: { rows: number } }).dataset.rows;
    expect(rows).toBeGreaterThan(0);
    expect(train!.profile!.training).toMatchObject({ steps: 3, examples: rows });
    expect(train!.profile!.training.examples_per_s).toBeGreaterThan(0);
    expect(train!.profile!.startup.trainer_ms).toBeGreaterThan(0);
    expect(train!.profile!.generation.requests).toBe(0);
    // its process was reaped: Linux counts its CPU among this process's children
    if (process.platform === 'linux') expect(train!.profile!.cpu_ms.children).toBeGreaterThan(0);
    expect(ev!.profile!.generation.requests).toBeGreaterThan(0);
    // a remote model: no local server started, none reports batch counters
    expect(ev!.profile!.startup.servers).toBe(0);
    expect(ev!.profile!.generation.occupancy).toBeNull();

    const status = await runCli(['loop', 'status', '--json'], { cwd: project.dir });
    expect(status.exitCode).toBe(0);
    const shown = JSON.parse(status.stdout) as { cycles: { stages: Record<string, { profile?: unknown }> }[] };
    expect(shown.cycles[0]!.stages.collect!.profile).toEqual(collect!.profile);
    expect(shown.cycles[0]!.stages.train!.profile).toEqual(train!.profile);

    const text = await runCli(['loop', 'status'], { cwd: project.dir });
    expect(text.stdout).toContain('cycle 1: where the time went');
    expect(text.stdout).toMatch(/train\s*│\s*[\d.]+/);

    const html = fs.readFileSync(ev!.report as string, 'utf8');
    expect(html).toContain('Where each loop cycle’s time went'.replace('’', "'"));
    expect(html).toMatch(/<h3>cycle 1 · /);
    expect(html).toContain('<td>collect</td>');
  }, 180_000);
});
