import { afterEach, describe, expect, it } from 'vitest';
import { deploy } from '../../src/pipeline/deploy/deploy.js';
import { evaluate } from '../../src/pipeline/evaluate/evaluate.js';
import { trainPrompts } from '../../src/pipeline/prompt-opt/train-prompts.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { promptOptProject, promptOptScript } from '../support/prompt-opt-project.js';
import { startScriptedServer, type ScriptedRequest, type ScriptedServer } from '../support/scripted-server.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const FIX = 'Present the answer the votes chose, unchanged.';

/**
 * The agents always answer right; the presenter garbles the chosen answer unless its prompt holds FIX.
 * The optimizer proposes FIX for whatever prompt it is asked about.
 */
function script(calls: ScriptedRequest[]) {
  const team = promptOptScript({
    right: () => true,
    optimizerCalls: calls,
    propose: (current) => (current.includes(FIX) ? current : `${current} ${FIX}`),
  });
  return (req: ScriptedRequest) => {
    const system = String(req.messages[0]?.content ?? '');
    if (/was selected/.test(system) && !system.includes(FIX)) return { content: 'Final answer: 0' };
    return team(req);
  };
}

describe("train prompts with the presenter's prompt", () => {
  it('blames the presenter for wrong presentations of right answers, edits its prompt, and deploys it as the presenter', async () => {
    const calls: ScriptedRequest[] = [];
    server = await startScriptedServer(script(calls));
    const p = promptOptProject(
      server.baseUrl,
      '  prompts: [solver, presenter]\n  rounds: 2\n  val_n: 4\n  minibatch: 3\n  merge_every: 0\n  budget: { rollouts: 40 }\n',
      {
        prompts:
          '  solver: { text: "You are a problem solver." }\n  presenter: { text: "You present the team\'s answer." }',
      },
    );
    const load = () => p.load(['orchestrator.presenter_prompt=presenter']);
    const r = await withRuntime(load(), (rt) => trainPrompts(rt));
    expect(r.baselineMean).toBe(0);
    expect(r.best!.valMean).toBe(1);
    // Every agent answered right, so the credit went to the presenter: it was asked about the presenter's prompt.
    expect(String(calls[0]!.messages.at(-1)!.content)).toMatch(
      /the prompt of the agent presenting the team's final answer/,
    );
    expect(r.best!.prompts).toEqual(
      expect.arrayContaining([
        { name: 'presenter', version: 2 },
        { name: 'solver', version: 1 },
      ]),
    );
    const ev = await withRuntime(load(), (rt) => evaluate(rt));
    expect(ev.passed).toBe(true);
    expect((await withRuntime(load(), (rt) => deploy(rt))).action).toBe('promoted');
    const store = openStore(load());
    try {
      const prod = store.sets.get(store.sets.pointer('production')!.setId)!;
      expect(store.resources.get(prod.members.presenter!)).toMatchObject({ name: 'presenter', version: 2 });
      expect(Object.values(prod.members.agents).every((m) => store.resources.get(m.prompt)!.version === 1)).toBe(true);
    } finally {
      store.close();
    }
  }, 120_000);
});
