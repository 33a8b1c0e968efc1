import { afterEach, describe, expect, it } from 'vitest';
import { runCycle } from '../../src/pipeline/loop/loop.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { getSuite } from '../../src/tasks/index.js';
import { suiteLevelOf } from '../../src/tasks/suites/define.js';
import { loopProject, type LoopProject } from '../support/loop-project.js';
import type { Script } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

let project: LoopProject | undefined;
afterEach(async () => {
  await project?.server.close();
  project = undefined;
});

const TASKS = ([0, 1] as const).flatMap((difficulty) =>
  getSuite('arithmetic')
    .generate(30, 1, { difficulty })
    .map((t) => ({ prompt: t.prompt, reference: t.reference!, level: difficulty })),
);

/** The baseline solves level 0 only; a trained adapter (base-vN) solves level 1 and has forgotten level 0. */
const forgetful: Script = (req) => {
  const text = req.messages.map((m) => m.content ?? '').join('\n');
  const task = TASKS.find((t) => text.includes(t.prompt));
  const trained = /^base-v\d+$/.test(req.model);
  const solves = task && (trained ? task.level === 1 : task.level === 0);
  const answer = !task ? '0' : solves ? task.reference : `${Number(task.reference) + 1}`;
  if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: `Final answer: ${answer}` };
  return shownLabels(req).length ? { content: 'VOTE: agent1 | agreed' } : { content: `ANSWER: ${answer}` };
};

describe('a cycle with the curriculum', () => {
  it('evaluates the lower level too and refuses a candidate that forgot it', async () => {
    project = await loopProject(forgetful);
    const loaded = project.load([
      'tasks.sources=[{suite: arithmetic, n: 30, seed: 1}]',
      'tasks.curriculum={enabled: true, min_tasks: 1000}',
      'collect={n: 8, split: train, concurrency: 4}',
      'eval={split: eval, seeds: 1, report: false}',
      'deploy.gates={min_pairs: 4, min_improvement: -1, ci_lower_above_zero: false, max_category_regression: 1}',
    ]);
    const store = openStore(loaded);
    store.curriculum.setLevel({ suite: 'arithmetic', fromLevel: 0, level: 1, reason: 'set by the test', detail: {} });
    store.close();

    const r = await withRuntime(loaded, (rt) => runCycle(rt));
    // The collect drew level 1 with level 0 replayed; only level 1's results count, too few to move up.
    const collected = r.stages.collect as unknown as { tasks: number; curriculum: { recorded: number; advanced: [] } };
    expect(collected.curriculum.advanced).toEqual([]);
    expect(collected.curriculum.recorded).toBeGreaterThan(0);
    expect(collected.curriculum.recorded).toBeLessThan(collected.tasks);
    expect(r.stages.train).toMatchObject({ status: 'done', weights: 'base v1' });
    expect(r.stages.eval).toMatchObject({ status: 'done', passed: false });
    // The deploy stage holds the stored evaluation against today's gates, this one among them.
    expect(r.stages.deploy).toMatchObject({ action: 'not promoted' });
    expect(r.stages.deploy!.gates).toContainEqual(expect.objectContaining({ gate: 'no_forgetting', passed: false }));

    const again = openStore(loaded);
    try {
      const run = again.evaluations.runs({ limit: 1 })[0]!;
      const levels = (run.params.task_ids as string[]).map((id) => suiteLevelOf(id)!.level);
      expect(new Set(levels)).toEqual(new Set([0, 1]));
      const gates = run.summary!.gates as { gate: string; passed: boolean; detail: string }[];
      const gate = gates.find((g) => g.gate === 'no_forgetting')!;
      expect(gate.passed).toBe(false);
      expect(gate.detail).toMatch(
        /Holm at α 0\.05 \(reward\): the candidate forgot arithmetic@0 -2\.0000 \[-2\.0000, -2\.0000\] over \d+ pair/,
      );
      expect(gates.filter((g) => !g.passed).map((g) => g.gate)).toEqual(['no_forgetting']);
    } finally {
      again.close();
    }
  });
});
