import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { collect } from '../../src/pipeline/collect/collect.js';
import { deploy, rollback } from '../../src/pipeline/deploy/deploy.js';
import { evaluate } from '../../src/pipeline/evaluate/evaluate.js';
import { runCycle } from '../../src/pipeline/loop/loop.js';
import type { Review } from '../../src/pipeline/review/review.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { storeDb } from '../../src/store/store.js';
import { hasStack, runCli } from '../helpers.js';
import { adapterScript, loopProject, type LoopProject } from '../support/loop-project.js';

let project: LoopProject | undefined;
afterEach(async () => {
  await project?.server.close();
  project = undefined;
});

describe('a cycle: collect → review → train → eval → deploy', () => {
  it('promotes a better candidate: its adapter is loaded, evaluated on the same tasks and seeds, and serves later collects', async () => {
    project = await loopProject();
    const loaded = project.load(['eval.report=true']);
    const stages: string[] = [];
    const r = await withRuntime(loaded, (rt) => runCycle(rt, { onStage: (s) => stages.push(s) }));
    expect(r).toMatchObject({ cycle: 1, resumed: false, status: 'completed' });
    expect(r.outcome).toMatch(/^promoted/);
    expect(r.stages.collect).toMatchObject({ status: 'done', tasks: 4, completed: 4 });
    expect(r.stages.review).toMatchObject({ status: 'done', canary: null, watch: null });
    expect(r.stages.train).toMatchObject({ status: 'done', weights: 'base v1' });
    expect(r.stages.eval).toMatchObject({ status: 'done', passed: true, metric: 'reward' });
    expect(r.stages.deploy).toMatchObject({ status: 'done', action: 'promoted' });
    expect(project.server.adapters).toEqual(new Set(['base-v1']));
    // The cycle's report is written once it is decided: it shows the deploy in the production history.
    const html = fs.readFileSync(r.stages.eval!.report as string, 'utf8');
    expect(html).toContain(String(r.stages.eval!.eval_run_id));
    expect(html).toMatch(/>deploy</);

    // Baseline and candidate ran on the same tasks and seeds: every seeded request of one side has its twin.
    const evalRequests = project.server.requests.filter((q) => typeof q.seed === 'number');
    const side = (m: string) =>
      evalRequests
        .filter((q) => (q.model === 'base-v1') === (m === 'candidate'))
        .map((q) => q.seed)
        .sort();
    expect(side('baseline').length).toBeGreaterThan(0);
    expect(new Set(side('candidate'))).toEqual(new Set(side('baseline')));

    const store = openStore(loaded);
    try {
      const prod = store.sets.get(store.sets.pointer('production')!.setId)!;
      const weights = store.resources.get(prod.members.agents.a!.weights!)!;
      expect(weights).toMatchObject({ name: 'base', version: 1 });
      const audit = store.audit.list({ limit: 10 });
      expect(audit[0]).toMatchObject({
        action: 'deploy',
        trigger: 'loop',
        afterSet: prod.id,
        evalRunId: r.stages.eval!.eval_run_id,
      });
      expect(store.loopRuns.get(r.loopRunId)).toMatchObject({ status: 'completed' });
      // Evaluation rollouts are kept apart from training data.
      const sources = storeDb(store).prepare('SELECT source, COUNT(*) AS n FROM rollouts GROUP BY source').all();
      expect(sources).toEqual(
        expect.arrayContaining([
          { source: 'collect', n: 4 },
          { source: 'eval', n: 16 },
        ]),
      );
    } finally {
      store.close();
    }
    // The next collect is served by the deployed adapter.
    const before = project.server.requests.length;
    await withRuntime(loaded, (rt) => collect(rt, { n: 1 }));
    expect(project.server.requests.slice(before).every((q) => q.model === 'base-v1')).toBe(true);
  }, 180_000);

  it('does not promote a candidate that is no better: the failed gates and their numbers are the outcome', async () => {
    project = await loopProject(adapterScript({ good: () => true }));
    // loop.steps as configs written before review was a stage list them: review runs after collect, and says why.
    const notes: string[] = [];
    const r = await withRuntime(project.load(['loop.steps=[collect, train, eval, deploy]']), (rt) =>
      runCycle(rt, { onStage: (s, m) => notes.push(`${s}: ${m}`) }),
    );
    expect(r.status).toBe('completed');
    expect(Object.keys(r.stages)).toEqual(['collect', 'review', 'train', 'eval', 'deploy']);
    expect(notes[0]).toMatch(
      /^review: loop.steps lists collect without review: review runs after it .*add review to loop.steps$/,
    );
    expect(r.stages.deploy).toMatchObject({ status: 'done', action: 'not promoted' });
    expect(r.outcome).toMatch(/^not promoted \(failed gates: min_improvement, ci_lower_above_zero\)/);
    const gates = r.stages.deploy!.gates as { gate: string; passed: boolean; detail: string }[];
    expect(gates.find((g) => g.gate === 'min_improvement')).toMatchObject({
      passed: false,
      detail: expect.stringContaining('difference 0.0000'),
    });
  }, 180_000);

  it('checks the trainer settings before it collects: a bad key stops the cycle at once, naming the key', async () => {
    project = await loopProject();
    const r = await runCli(['loop', '--once', '--set', 'train.sft.warmup_ratio=0.1'], { cwd: project.dir });
    expect(r.exitCode, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/train\.sft\.warmup_ratio: not a setting .*warmup_steps below 1/);
    expect(hasStack(r.stderr)).toBe(false);
    expect(project.server.requests).toEqual([]);
    const warm = await runCli(
      ['loop', '--once', '--set', 'train.sft.warmup_steps=0.5', '--set', 'loop.steps=[collect, review, train]'],
      {
        cwd: project.dir,
        timeoutMs: 120_000,
      },
    );
    expect(warm.exitCode, warm.stderr).toBe(0);
  }, 180_000);

  it('reuses measured results, refuses stale or missing evaluations, and rolls back to the previous set or a named one', async () => {
    project = await loopProject();
    const loaded = project.load();
    await withRuntime(loaded, (rt) => runCycle(rt));
    const store = openStore(loaded);
    const [promoted, first] = [
      store.sets.pointer('production')!.setId,
      store.audit.list({ limit: 50 }).find((a) => a.action === 'init')!.afterSet!,
    ];
    store.close();

    // Evaluating the same candidate against the first set again measures nothing new.
    const again = await withRuntime(loaded, (rt) =>
      evaluate(rt, {
        candidate: `set:${openVersion(loaded, promoted)}`,
        baseline: `set:${openVersion(loaded, first)}`,
      }),
    );
    expect(again).toMatchObject({ measured: 0, reused: 16 });

    const back = await withRuntime(loaded, (rt) => rollback(rt, { reason: 'test' }));
    expect(back.after.id).toBe(first);
    // The promoted set was evaluated against the first set, which is production again: deploy accepts it.
    const redeploy = await withRuntime(loaded, (rt) =>
      deploy(rt, { candidate: `set:${openVersion(loaded, promoted)}` }),
    );
    expect(redeploy.action).toBe('promoted');
    const to = await withRuntime(loaded, (rt) => rollback(rt, { to: `set:${openVersion(loaded, first)}` }));
    expect(to.after.id).toBe(first);
    // A candidate never evaluated against production is not promoted unless forced, and the audit says so.
    const fresh = await withRuntime(loaded, (rt) => deploy(rt, { candidate: 'base@1' }));
    expect(fresh.action).toBe('promoted'); // base@1 is the promoted set again: its evaluation against set v1 stands
    await withRuntime(loaded, (rt) => rollback(rt, {}));
    const s2 = openStore(loaded);
    const orphanPrompt = s2.resources.add({
      kind: 'prompt',
      name: 'solver',
      content: 'Answer briefly.',
      metadata: { source: 'manual' },
    });
    s2.close();
    const unevaluated = await withRuntime(loaded, (rt) => deploy(rt, { candidate: `solver@${orphanPrompt.version}` }));
    expect(unevaluated).toMatchObject({ action: 'not promoted', passed: false });
    expect(unevaluated.gates[0]).toMatchObject({ gate: 'evaluated', passed: false });
    const forced = await withRuntime(loaded, (rt) =>
      deploy(rt, { candidate: `solver@${orphanPrompt.version}`, force: true }),
    );
    expect(forced.action).toBe('forced');
    const s3 = openStore(loaded);
    expect(s3.audit.list({ limit: 1 })[0]).toMatchObject({
      action: 'force-deploy',
      detail: expect.objectContaining({ forced: true }),
    });
    s3.close();
  }, 240_000);

  it('starts a canary on a share of later collects, which never switch production: review promotes it once it passes its gates', async () => {
    project = await loopProject();
    const loaded = project.load([]);
    const overrides = ['deploy.canary.min_rollouts=3', 'deploy.gates.ci_lower_above_zero=false'];
    const withCanary = project.load(overrides);
    const cycle = await withRuntime(loaded, (rt) => runCycle(rt, {}));
    expect(cycle.stages.eval).toMatchObject({ passed: true });
    // Undo the cycle's deploy, then deploy the evaluated candidate as a canary on half of the collects.
    await withRuntime(loaded, (rt) => rollback(rt, {}));
    const started = await withRuntime(withCanary, (rt) => deploy(rt, { candidate: 'base@1', canary: 0.5 }));
    expect(started.action).toBe('canary started');
    const review = async () => {
      const r = await runCli(['--json', ...overrides.flatMap((o) => ['--set', o]), 'review'], { cwd: project!.dir });
      expect(r.exitCode, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as Review & { ok: boolean };
    };
    let promoted = false;
    for (let i = 0; i < 6 && !promoted; i++) {
      const c = await withRuntime(withCanary, (rt) => collect(rt));
      expect(c.canary).toMatchObject({ fraction: 0.5 });
      expect(c).not.toHaveProperty('review');
      expect(pointers(loaded)).toEqual({ production: started.before.id, canary: started.candidate.id });
      const r = await review();
      expect(r).toMatchObject({ ok: true, canary: { set: { id: started.candidate.id } } });
      promoted = r.canary?.verdict === 'promoted';
    }
    expect(promoted).toBe(true);
    const store = openStore(loaded);
    try {
      const [latest] = store.audit.list({ limit: 1 });
      expect(latest).toMatchObject({ action: 'canary-promote', trigger: 'cli' });
      expect(store.sets.pointer('canary')).toBeUndefined();
      const canaryRollouts = storeDb(store)
        .prepare("SELECT COUNT(*) FROM rollouts WHERE json_extract(metadata, '$.canary') = 1")
        .pluck()
        .get() as number;
      expect(canaryRollouts).toBeGreaterThanOrEqual(3);
      expect(
        store.resources.get(store.sets.get(store.sets.pointer('production')!.setId)!.members.agents.a!.weights!),
      ).toMatchObject({ name: 'base', version: 1 });
    } finally {
      store.close();
    }
    const text = await runCli(['review'], { cwd: project.dir });
    expect(text.exitCode, text.stderr).toBe(0);
    expect(text.stdout).toContain('canary: none running');
    expect(text.stdout).toMatch(/production set v\d+ since its deploy: waiting, 0 of 4 rollouts/);
  }, 240_000);

  it('makes no candidate while a canary is in its stages: the canary stays, the skipped stages say why', async () => {
    project = await loopProject();
    const staged = project.load(['deploy.rollout=[0.5, 1.0]', 'deploy.canary.min_rollouts=2']);
    const first = await withRuntime(staged, (rt) => runCycle(rt));
    expect(first.stages.deploy).toMatchObject({ status: 'done', action: 'canary started' });
    const pointer = () => {
      const store = openStore(staged);
      try {
        return store.sets.pointer('canary');
      } finally {
        store.close();
      }
    };
    const canary = pointer()!;
    // a build a killed process left half-written: the cycle sweeps it though it builds nothing itself
    const deadBuild = path.join(staged.paths.dataDir, 'datasets', '.tmp-sft-2147483646-deadbeef');
    fs.mkdirSync(deadBuild, { recursive: true });
    // cycle 2: review takes the canary on (4 tasks, half on it: it may wait or advance); nothing else is made
    const second = await withRuntime(staged, (rt) => runCycle(rt));
    expect(fs.existsSync(deadBuild)).toBe(false);
    expect(second.stages.review).toMatchObject({ status: 'done' });
    expect(second.stages.train).toMatchObject({ status: 'skipped' });
    expect(second.stages.train!.reason).toMatch(/^a canary is in its stages \(set v\d+, (50|100) % of traffic\)/);
    expect(second.stages.eval).toMatchObject({ status: 'skipped' });
    expect(second.stages.deploy).toMatchObject({ status: 'skipped' });
    expect(pointer()?.setId).toBe(canary.setId);
  }, 120_000);

  it('rolls back automatically when production drops significantly after a deploy', async () => {
    let broken = false;
    project = await loopProject(adapterScript({ good: (req) => !broken || !/^base-v\d+$/.test(req.model) }));
    const loaded = project.load();
    // Production before the deploy answers well; the candidate is forced in and then turns bad.
    await withRuntime(loaded, (rt) => collect(rt));
    await withRuntime(loaded, (rt) => collect(rt));
    const cycle = await withRuntime(loaded, (rt) => runCycle(rt));
    expect(cycle.stages.train?.status).toBe('done');
    if (cycle.stages.deploy?.action !== 'promoted')
      await withRuntime(loaded, (rt) => deploy(rt, { candidate: 'base@1', force: true }));
    broken = true;
    const deployed = pointers(loaded).production;
    // The collect that used to roll back records its rollouts and leaves production as it is.
    const after = await withRuntime(loaded, (rt) => collect(rt));
    expect(after).not.toHaveProperty('review');
    expect(pointers(loaded).production).toBe(deployed);
    // The loop's review stage rolls back.
    const reviewed = await withRuntime(project.load(['loop.steps=[review]']), (rt) => runCycle(rt));
    expect(reviewed.stages.review).toMatchObject({
      status: 'done',
      canary: null,
      watch: 'rolled back',
      detail: expect.stringMatching(/rolled back \(mean reward/),
    });
    expect(Object.keys(reviewed.stages)).toEqual(['review']);
    const store = openStore(loaded);
    try {
      const latest = store.audit.list({ limit: 1 })[0]!;
      expect(latest).toMatchObject({ action: 'auto-rollback', trigger: 'watch' });
      expect(latest.reason).toMatch(/production regressed after the deploy: mean reward .* drop .* one-sided p/);
      expect(store.sets.pointer('production')!.setId).not.toBe(deployed);
      expect(
        store.resources.get(store.sets.get(store.sets.pointer('production')!.setId)!.members.agents.a!.weights ?? ''),
      ).toBeUndefined();
    } finally {
      store.close();
    }
  }, 240_000);
});

function pointers(loaded: ReturnType<LoopProject['load']>): {
  production: string | undefined;
  canary: string | undefined;
} {
  const store = openStore(loaded);
  try {
    return { production: store.sets.pointer('production')?.setId, canary: store.sets.pointer('canary')?.setId };
  } finally {
    store.close();
  }
}

function openVersion(loaded: ReturnType<LoopProject['load']>, id: string): number {
  const store = openStore(loaded);
  try {
    return store.sets.get(id)!.version;
  } finally {
    store.close();
  }
}
