import { afterEach, describe, expect, it } from 'vitest';
import type { PromptOptState } from '../../src/pipeline/prompt-opt/state.js';
import { trainPrompts, type PromptOptResult } from '../../src/pipeline/prompt-opt/train-prompts.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { promptOptProject, promptOptScript } from '../support/prompt-opt-project.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const M1 = 'Add the ones first.';
const M2 = 'Add the tens first.';

/**
 * Two prompts: p1 (agents a, b) and p2 (agent c). p1 alone gets multiples of 3 right, with M1 even
 * numbers instead; p2 alone gets nothing right, with M2 odd numbers. So an edit of p1 and an edit of
 * p2 each fix part of the tasks, and only the team with both edits gets every task right.
 */
const right = (s: string, n: number) =>
  s.includes('solver one') ? (s.includes(M1) ? n % 2 === 0 : n % 3 === 0) : s.includes(M2) && n % 2 === 1;
const propose = (current: string, agents: string[]) => {
  const magic = agents.includes('c') ? M2 : M1;
  return current.includes(magic) ? current : `${current} ${magic}`;
};

function twoPrompts(url: string, seed: number, rounds: number) {
  return promptOptProject(
    url,
    `  prompts: [p1, p2]\n  seed: ${seed}\n  rounds: ${rounds}\n  val_n: 6\n  minibatch: 3\n  merge_every: 2\n  budget: { rollouts: 300, optimizer_tokens: 50000 }\n`,
    {
      tasks: 20,
      prompts: '  p1: { text: "You are solver one." }\n  p2: { text: "You are solver two." }',
      agents:
        '  - { id: a, model: stub, tool_mode: text, system_prompt: p1 }\n  - { id: b, model: stub, tool_mode: text, system_prompt: p1 }\n  - { id: c, model: stub, tool_mode: text, system_prompt: p2 }',
    },
  );
}

const validatedTwice = (r: PromptOptResult) => {
  const validated = r.candidates.filter((c) => c.valMean !== null).map((c) => JSON.stringify(c.prompts));
  return validated.length - new Set(validated).size;
};

describe('train prompts: merges', () => {
  it('merges two front candidates that changed different prompts into the team that takes both changes', async () => {
    server = await startScriptedServer(promptOptScript({ right, propose }));
    const p = twoPrompts(server.baseUrl, 7, 4);
    const r = await withRuntime(p.load(), (rt) => trainPrompts(rt));
    expect(r.status).toBe('completed');
    // Merges come only at every second proposal, and only when the front holds two candidates to merge.
    expect(r.proposals.filter((x) => x.kind === 'merge').every((x) => (x.step + 1) % 2 === 0)).toBe(true);
    const merge = r.proposals.find((x) => x.kind === 'merge');
    expect(merge).toMatchObject({ outcome: 'accepted', component: null, optimizerTokens: 0 });
    const [a, b] = merge!.parents.map((id) => r.candidates.find((c) => c.id === id)!);
    const child = r.candidates.find((c) => c.id === merge!.candidate)!;
    // The parents changed different prompts of the seed; both were on the front when merged (accepted on validation).
    expect(new Set([a!.edited, b!.edited])).toEqual(new Set(['p1', 'p2']));
    expect(r.proposals.filter((x) => x.outcome === 'accepted' && x.step < merge!.step).map((x) => x.candidate)).toEqual(
      expect.arrayContaining([a!.id, b!.id]),
    );
    expect(child).toMatchObject({ parents: [a!.id, b!.id], edited: null, valMean: 1, onFront: true });
    expect(child.valMean).toBeGreaterThan(Math.max(a!.valMean!, b!.valMean!));
    expect(r.best!.id).toBe(child.id);
    expect(r.candidateSet).not.toBeNull();

    const store = openStore(p.load());
    try {
      const run = store.trainingRuns.get(r.runId)!;
      const promptIds = (id: string) =>
        (run.detail as unknown as PromptOptState).candidates.find((c) => c.id === id)!.prompts;
      const fromP1 = a!.edited === 'p1' ? a! : b!;
      const fromP2 = a!.edited === 'p2' ? a! : b!;
      // The merged team serves the very prompt versions its parents made: no new version is written.
      expect(promptIds(child.id)).toEqual({ p1: promptIds(fromP1.id).p1, p2: promptIds(fromP2.id).p2 });
      expect(store.resources.get(promptIds(child.id).p1!)!.content).toContain(M1);
      expect(store.resources.get(promptIds(child.id).p2!)!.content).toContain(M2);
      const set = store.sets.get(run.result!.candidate_set as string)!;
      expect(set.members.agents.a!.prompt).toBe(promptIds(fromP1.id).p1);
      expect(set.members.agents.c!.prompt).toBe(promptIds(fromP2.id).p2);
    } finally {
      store.close();
    }
    expect(validatedTwice(r)).toBe(0);
  }, 120_000);

  it('refuses a proposal of a team already validated, and never merges an ancestor with its descendant', async () => {
    server = await startScriptedServer(promptOptScript({ right, propose }));
    // The seed's front keeps c0 next to its child c1: drawn again, c0 gets the same edit proposed.
    const r = await withRuntime(twoPrompts(server.baseUrl, 16, 8).load(), (rt) => trainPrompts(rt));
    expect(r.proposals[0]).toMatchObject({ kind: 'reflect', parents: ['c0'], outcome: 'accepted', candidate: 'c1' });
    const again = r.proposals.filter((x) => x.detail === 'the same prompts as c1');
    expect(again.length).toBeGreaterThan(0);
    expect(again.every((x) => x.outcome === 'refused' && x.candidate === null && x.optimizerTokens > 0)).toBe(true);
    expect(validatedTwice(r)).toBe(0);
    // c0 and c1 were on the front together at every merge step until c2 came: no merge of the two was tried.
    expect(r.proposals.filter((x) => x.kind === 'merge').map((x) => [...x.parents].sort().join('+'))).toEqual([
      'c1+c2',
    ]);
    expect(r.proposals.find((x) => x.kind === 'merge')).toMatchObject({ outcome: 'accepted', step: 7 });
  }, 120_000);
});
