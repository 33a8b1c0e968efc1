import { afterEach, describe, expect, it } from 'vitest';
import { runCycle } from '../../src/pipeline/loop/loop.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { promptOptProject, promptOptScript, MAGIC } from '../support/prompt-opt-project.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const SETTINGS =
  '  rounds: 2\n  val_n: 4\n  minibatch: 3\n  merge_every: 0\n  budget: { rollouts: 40, optimizer_tokens: 5000 }\n';

describe('a cycle with prompt optimization: prompt_opt → eval → deploy', () => {
  it('evaluates and promotes the prompts prompt_opt chose; the next cycle starts afresh and finds nothing better to evaluate', async () => {
    server = await startScriptedServer(promptOptScript());
    const p = promptOptProject(server.baseUrl, SETTINGS, { extra: 'loop:\n  steps: [prompt_opt, eval, deploy]\n' });
    const first = await withRuntime(p.load(), (rt) => runCycle(rt));
    expect(first).toMatchObject({ cycle: 1, resumed: false, status: 'completed' });
    expect(Object.keys(first.stages).sort()).toEqual(['deploy', 'eval', 'prompt_opt']);
    const apo = first.stages.prompt_opt!;
    expect(apo).toMatchObject({ status: 'done', best_mean: 1, candidate_set: expect.any(String) });
    expect(apo.baseline_mean).toBeLessThan(1);
    expect(apo.rollouts).toBeLessThanOrEqual(40);
    expect(first.stages.eval).toMatchObject({ status: 'done', candidate_set: apo.candidate_set, passed: true });
    expect(first.stages.deploy).toMatchObject({ status: 'done', action: 'promoted' });
    expect(first.outcome).toMatch(/^promoted/);

    let store = openStore(p.load());
    try {
      expect(store.trainingRuns.get(apo.training_run_id as string)!.status).toBe('completed');
      const production = store.sets.get(store.sets.pointer('production')!.setId)!;
      expect(production.id).toBe(apo.candidate_set);
      for (const id of ['a', 'b', 'c'])
        expect(store.resources.get(production.members.agents[id]!.prompt!)!.content).toContain(MAGIC);
    } finally {
      store.close();
    }

    const second = await withRuntime(p.load(), (rt) => runCycle(rt));
    expect(second).toMatchObject({ cycle: 2, resumed: false, status: 'completed' });
    // A new run on the promoted prompts, not the first one resumed.
    expect(second.stages.prompt_opt).toMatchObject({
      status: 'done',
      candidate_set: null,
      best_mean: 1,
      baseline_mean: 1,
      reason: 'no candidate beat the current prompts',
    });
    expect(second.stages.prompt_opt!.training_run_id).not.toBe(apo.training_run_id);
    expect(second.stages.prompt_opt!.rollouts).toBeLessThan(apo.rollouts as number);
    expect(second.stages.eval).toMatchObject({ status: 'skipped', reason: 'no new candidate in this cycle' });
    expect(second.stages.deploy).toMatchObject({ status: 'skipped', reason: 'nothing was evaluated in this cycle' });
    expect(second.outcome).toMatch(/^not promoted: /);
    store = openStore(p.load());
    try {
      expect(store.sets.pointer('production')!.setId).toBe(apo.candidate_set);
      expect(store.trainingRuns.get(second.stages.prompt_opt!.training_run_id as string)!.status).toBe('completed');
      expect(store.loopRuns.latest(5).map((r) => r.status)).toEqual(['completed', 'completed']);
    } finally {
      store.close();
    }
  }, 180_000);
});
