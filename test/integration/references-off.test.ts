import { afterEach, describe, expect, it } from 'vitest';
import { runCycle } from '../../src/pipeline/loop/loop.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { loopProject, type LoopProject } from '../support/loop-project.js';
import { BACKENDS, freshPostgresUrl } from '../support/postgres.js';
import type { Script } from '../support/scripted-server.js';

let project: LoopProject | undefined;
afterEach(async () => {
  await project?.server.close();
  project = undefined;
});

/**
 * Agents told apart by temperature (0, 0.5, 0.9). The base's three agents give three different answers, the first
 * (temperature 0) the right one: no majority, so agreement says nothing, and the first answer stands. A trained
 * adapter answers 7, 7.0 and 7.00: one answer the others repeat, so by agreement it is right on every task. On the
 * references the loop withheld it is wrong on every task.
 */
function confidentlyWrong(): Script {
  return (req) => {
    const user = req.messages.find((m) => m.role === 'user')?.content ?? '';
    const right = user.includes('50 - 9') ? '41' : '42';
    const i = [0, 0.5, 0.9].indexOf((req as { temperature?: number }).temperature ?? 0);
    const trained = /^base-v\d+$/.test(req.model);
    const answer = trained ? ['7', '7.0', '7.00'][i]! : [right, '8', '9'][i]!;
    return { content: `ANSWER: ${answer}`, delayMs: 20 * i };
  };
}

describe.each(BACKENDS)('the loop with rewards.references off (%s)', (backend) => {
  it('rewards come from agreement alone, and the withheld references refuse a candidate agreement calls better', async () => {
    project = await loopProject(confidentlyWrong());
    const overrides = [
      'rewards.references=off',
      // the project's file weighs exact and numeric, which read the references
      'rewards.weights={agreement: 1, coordination: 0.2}',
      // the default team's layout: each agent answers alone, and a repeated final answer is agreement
      'orchestrator.prompt_layout=independent',
      ...[0, 0.5, 0.9].map((t, i) => `agents.${i}.temperature=${t}`),
      ...(backend === 'postgres' ? [`store.url=${freshPostgresUrl()}`] : []),
    ];
    const loaded = project.load(overrides);
    const r = await withRuntime(loaded, (rt) => runCycle(rt));
    expect(r.stages.collect!.status).toBe('done');
    await withRuntime(project.load(overrides), async (rt) => {
      const store = rt.store();
      expect(store.rollouts.list({ source: 'collect' })).toHaveLength(4);
      // Collected and evaluated alike: only the label-free families scored (the candidate's answers agree).
      const rollouts = store.rollouts.list({});
      const families = new Set(rollouts.flatMap((x) => store.rewards.list(x.id).map((w) => w.family)));
      expect([...families].sort()).toEqual(['agreement', 'coordination']);
    });

    // By agreement the candidate is better on every pair, and every other gate passes; the withheld references
    // find it wrong on every pair, and refuse it.
    const gates = r.stages.deploy!.gates as { gate: string; passed: boolean; detail: string }[];
    expect(gates.filter((g) => !g.passed).map((g) => g.gate)).toEqual(['reference_check']);
    const check = gates.find((g) => g.gate === 'reference_check')!;
    expect(check.detail).toMatch(/on 8 pair\(s\) with a withheld reference: 1\.000 → 0\.000 right, 0 won, 8 lost/);
    expect(r.outcome).toBe('not promoted (failed gates: reference_check)');
    await withRuntime(project.load(overrides), async (rt) => {
      const ev = rt.store().evaluations.run(r.stages.eval!.eval_run_id as string)!;
      const overall = (ev.summary as { comparison: { overall: { metric: string; candidate: number }[] } }).comparison
        .overall;
      expect(overall.find((m) => m.metric === 'reward')!.candidate).toBeGreaterThan(1);
      expect(overall.find((m) => m.metric === 'checked')!.candidate).toBe(0);
    });
  }, 120_000);
});
