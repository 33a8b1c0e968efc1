import { afterEach, describe, expect, it } from 'vitest';
import { collect } from '../../src/pipeline/collect/collect.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { trainRoles } from '../../src/pipeline/train/roles.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { MAGIC, promptOptProject, promptOptScript } from '../support/prompt-opt-project.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';

// Roles whose recipes train no weights, in the same cycle: a bandit role's decisions learned from the logged ones,
// an apo role's agents' prompts optimized by the search, both taken into the one candidate.
let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const PROMPTS = '  solver: { text: "You are a problem solver." }\n  checker: { text: "You check answers." }';
const AGENTS = ['a', 'b', 'c']
  .map((x) => `  - { id: ${x}, model: stub, tool_mode: text${x === 'c' ? ', system_prompt: checker' : ''} }`)
  .join('\n');
const SEARCH = 'rounds: 2, val_n: 4, minibatch: 3, merge_every: 0, budget: { rollouts: 40, optimizer_tokens: 5000 }';
const ROLES = `policies: { bootstrap: [stop] }
roles:
  router: { policies: [stop], recipe: { algo: bandit, min_decisions: 4 } }
  checker: { agents: [c], recipe: { algo: apo, optimizer_model: opt, ${SEARCH} } }
`;

describe('roles with bandit and apo recipes', () => {
  it("learns the router's stop policy and the checker's prompt in one cycle, and the candidate serves both", async () => {
    server = await startScriptedServer(promptOptScript());
    const p = promptOptProject(server.baseUrl, '', { prompts: PROMPTS, agents: AGENTS, extra: ROLES });
    await withRuntime(p.load(), (rt) => collect(rt));
    const r = await withRuntime(p.load(), async (rt) => {
      const trained = await trainRoles(rt);
      const store = rt.store();
      const set = store.sets.get(trained.candidateSet!.id)!;
      const production = syncProduction(rt);
      const prompt = (agent: string) => store.resources.get(set.members.agents[agent]!.prompt)!;
      return {
        roles: trained.roles.map((x) => [x.role, x.algo, x.status, x.line]),
        policy: store.resources.get(set.members.policies!.stop!)!,
        router: trained.roles[0]!,
        checker: prompt('c'),
        kept: ['a', 'b'].map((x) => set.members.agents[x]!.prompt === production.members.agents[x]!.prompt),
        weights: ['a', 'b', 'c'].map((x) => set.members.agents[x]!.weights === production.members.agents[x]!.weights),
      };
    });
    expect(r.roles).toEqual([
      ['router', 'bandit', 'trained', null],
      ['checker', 'apo', 'trained', null],
    ]);
    expect(r.policy).toMatchObject({ kind: 'policy', name: 'stop', version: 1 });
    expect(r.router.policies).toEqual({ stop: r.policy.id });
    expect(r.checker).toMatchObject({ name: 'checker', version: 2 });
    expect(r.checker.content).toContain(MAGIC);
    expect(r.kept).toEqual([true, true]);
    expect(r.weights).toEqual([true, true, true]);
  }, 120_000);

  it('skips a bandit role without enough decisions, with the reason, and trains the rest', async () => {
    server = await startScriptedServer(promptOptScript());
    const extra = ROLES.replace('min_decisions: 4', 'min_decisions: 100000');
    const p = promptOptProject(server.baseUrl, '', { prompts: PROMPTS, agents: AGENTS, extra });
    await withRuntime(p.load(), (rt) => collect(rt));
    const trained = await withRuntime(p.load(), (rt) => trainRoles(rt));
    expect(trained.roles.map((x) => [x.role, x.status])).toEqual([
      ['router', 'skipped'],
      ['checker', 'trained'],
    ]);
    expect(trained.roles[0]!.reason).toMatch(
      /^stop: only \d+ usable stop decision\(s\) .*roles\.router\.recipe\.min_decisions is 100000/,
    );
    expect(trained.candidateSet).not.toBeNull();
  }, 120_000);
});
