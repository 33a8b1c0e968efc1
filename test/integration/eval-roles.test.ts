import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { evaluateRoleCredit } from '../../src/pipeline/evaluate/roles.js';
import { withPrompt } from '../../src/resources/sets.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { runCli, tempDir } from '../helpers.js';
import { startScriptedServer, type Script, type ScriptedServer } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const TASKS = Array.from({ length: 6 }, (_, i) =>
  JSON.stringify({ id: `t${i}`, prompt: `What is ${40 + i} + ${2 - i}? (#${i})`, reference: '42' }),
).join('\n');

/** An agent is right only with a prompt that asks it to be careful; everyone votes for agent1 (agent a). */
const team: Script = (req) => {
  const system = req.messages[0]?.content ?? '';
  const answer = system.includes('careful') ? '42' : '41';
  if (system.includes('was selected')) return { content: `Final answer: ${answer}` };
  return shownLabels(req).length ? { content: 'VOTE: agent1 | first' } : { content: `ANSWER: ${answer}` };
};

function project(url: string) {
  const yaml = `models:
  stub: { base_url: "${url}", model: stub-model }
prompts:
  lead: { text: "You solve tasks." }
  second: { text: "You also solve tasks." }
agents:
  - { id: a, model: stub, system_prompt: lead, tool_mode: text }
  - { id: b, model: stub, system_prompt: second, tool_mode: text }
tasks:
  sources: [{ file: tasks.jsonl }]
rewards:
  weights: { exact: 1 }
collect: { concurrency: 2, split: all }
orchestrator: { agent_timeout_s: 10, total_timeout_s: 30 }
eval: { split: all, seeds: 1, report: false }
deploy:
  gates: { min_pairs: 6, min_improvement: 0.01, max_cost_increase: null }
roles:
  leader: { agents: [a] }
  second: { agents: [b] }
`;
  const dir = tempDir({ 'massgen-rl.yaml': yaml, 'tasks.jsonl': TASKS });
  return { dir, load: () => loadConfig({ cwd: dir }) };
}

const ROLES = { leader: { agents: ['a'] }, second: { agents: ['b'] }, idle: { agents: [] } };

describe('credit per role: leave-one-in variants against the baseline', () => {
  it("measures each changed role's own effect and promotes only the roles that pass", async () => {
    server = await startScriptedServer(team);
    const { dir, load } = project(server.baseUrl);
    await withRuntime(load(), (rt) => collect(rt));
    const result = await withRuntime(load(), async (rt) => {
      const store = rt.store();
      const production = store.sets.get(store.sets.pointer('production')!.setId)!;
      const careful = store.resources.add({ kind: 'prompt', name: 'lead', content: 'You solve tasks; be careful.' });
      const terse = store.resources.add({ kind: 'prompt', name: 'second', content: 'You solve tasks tersely.' });
      const members = withPrompt(withPrompt(production.members, rt.config, careful), rt.config, terse);
      const candidate = store.sets.add(members, { kind: 'manual' }, production.id);
      const credit = await evaluateRoleCredit(rt, { candidate: `set:${candidate.version}`, roles: ROLES });
      const promoted = credit.promotable ? store.sets.byVersion(credit.promotable.set) : undefined;
      return { credit, production, candidate, promoted };
    });
    const { credit, production, candidate, promoted } = result;
    expect(credit.team.comparison.pairs).toBe(6);
    expect(credit.team.passed).toBe(true);
    const [leader, second, idle] = credit.roles;
    expect(idle).toEqual({ role: 'idle', changed: false, set: null, summary: null, passed: null });
    expect(leader).toMatchObject({ role: 'leader', changed: true, passed: true });
    expect(second).toMatchObject({ role: 'second', changed: true, passed: false });
    const diff = (c: typeof leader) => c!.summary!.comparison.overall.find((m) => m.metric === 'success')!.diff!;
    expect(diff(leader).mean).toBeCloseTo(1);
    expect(diff(second).mean).toBeCloseTo(0);
    // The variants ran against the same baseline, whose results were measured once and then reused.
    expect(leader!.summary!.baseline.id).toBe(production.id);
    expect(second!.summary!.reused).toBeGreaterThanOrEqual(6);
    for (const c of [leader, second]) expect(c!.set).not.toBe(candidate.version);
    // Promotable: production with only the leader's new prompt.
    expect(credit.promotable!.roles).toEqual(['leader']);
    expect(promoted!.members.agents.a!.prompt).toBe(candidate.members.agents.a!.prompt);
    expect(promoted!.members.agents.b!.prompt).toBe(production.members.agents.b!.prompt);
    expect(promoted!.version).toBe(leader!.set);

    // `eval` with roles in the config measures them too; every result is stored already.
    const cli = await runCli(['eval', '--candidate', `set:${candidate.version}`], { cwd: dir });
    expect(cli.exitCode).toBe(0);
    expect(cli.stdout).toMatch(/per role: only that role's new members against the baseline/);
    expect(cli.stdout).toMatch(/leader\s+│ yes\s+│ v\d+\s+│ \+1\.000 \[\+1\.000, \+1\.000\]\s+│ pass/);
    expect(cli.stdout).toMatch(
      new RegExp(`deploy promotes set v${leader!.set}: the baseline with the new members of leader`),
    );
    const json = await runCli(['eval', '--candidate', `set:${candidate.version}`, '--json'], { cwd: dir });
    const out = JSON.parse(json.stdout) as { measured: number; roles: { role: string; passed: boolean }[] };
    expect(out.measured).toBe(0);
    expect(out.roles.map((r) => [r.role, r.passed])).toEqual([
      ['leader', true],
      ['second', false],
    ]);
  }, 60_000);
});
