import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { deploy } from '../../src/pipeline/deploy/deploy.js';
import { evaluate } from '../../src/pipeline/evaluate/evaluate.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { trainPolicy } from '../../src/pipeline/train/policy.js';
import { showSet } from '../../src/pipeline/utilities/resources.js';
import { taskFeatureNames } from '../../src/policies/index.js';
import { planRollout } from '../../src/rollouts/decide.js';
import { TeamPolicies } from '../../src/rollouts/team-policies.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { storeDb } from '../../src/store/store.js';
import { toOrchestrationTrace } from '../../src/trace/orchestration-trace.js';
import type { PolicyDecisionPayload } from '../../src/trace/payloads.js';
import { hasStack, runCli, tempDir } from '../helpers.js';
import { startScriptedServer, type Script, type ScriptedServer } from '../support/scripted-server.js';
import { team } from '../support/team.js';
import { shownLabels } from '../support/team.js';
import { traceProblems } from '../support/trace-schema.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const TASKS = Array.from({ length: 12 }, (_, i) =>
  JSON.stringify({
    id: `t${i}`,
    prompt: `What is ${40 + (i % 3)} + ${2 - (i % 3)}? (#${i})`,
    reference: '42',
    category: i % 2 ? 'arithmetic' : 'sums',
  }),
).join('\n');

/**
 * A team whose first answer is already right: every agent that has not answered yet adds an answer of
 * its own (400 tokens each) until all three have, then all vote for agent1. Going on past round 1 costs
 * tokens and gains nothing, so the best stop rule is known: stop at the end of round 1.
 */
const costlyTeam: Script = (req) => {
  if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: 'Final answer: 42' };
  const shown = shownLabels(req);
  if (shown.length >= 3)
    return { content: 'VOTE: agent1 | agreed', usage: { prompt_tokens: 100, completion_tokens: 20 } };
  return {
    content: `ANSWER: 42 (attempt ${shown.length + 1} by ${req.model})`,
    usage: { prompt_tokens: 100, completion_tokens: 400 },
  };
};

function project(url: string, policiesYaml: string) {
  const yaml = `models:
  stub: { base_url: "${url}", model: base-model }
agents:
  - { id: a, model: stub, tool_mode: text }
  - { id: b, model: stub, tool_mode: text }
  - { id: c, model: stub, tool_mode: text }
tasks:
  sources: [{ file: tasks.jsonl }]
rewards:
  weights: { exact: 1, coordination: 1 }
collect: { concurrency: 2, split: all }
orchestrator: { agent_timeout_s: 20, total_timeout_s: 60 }
eval: { split: all, seeds: 1, report: false }
deploy:
  gates: { min_pairs: 6, min_improvement: 0.01, max_cost_increase: null }
${policiesYaml}`;
  const dir = tempDir({ 'massgen-rl.yaml': yaml, 'tasks.jsonl': TASKS });
  return (overrides: string[] = []) => loadConfig({ cwd: dir, overrides });
}

describe('a learned stop policy, end to end', () => {
  it('logs explored decisions with propensities, learns to stop at round 1, is valued off-policy, wins its evaluation and is deployed', async () => {
    server = await startScriptedServer(costlyTeam);
    const load = project(server.baseUrl, 'policies: { bootstrap: [stop], cost_per_1k_tokens: 0.5, min_decisions: 10 }');
    for (let i = 0; i < 3; i++) await withRuntime(load(), (rt) => collect(rt));

    let store = openStore(load());
    const logged = store.spans.policyDecisions('stop');
    store.close();
    expect(logged.length).toBeGreaterThanOrEqual(30);
    const payloads = logged.map((r) => r.payload as PolicyDecisionPayload);
    // Uniform exploration before any policy: both arms taken, each with propensity 1/2.
    expect(new Set(payloads.map((p) => p.chosen))).toEqual(new Set(['continue', 'stop']));
    expect(payloads.every((p) => p.propensity === 0.5 && p.policy_id === null && p.algorithm === 'uniform')).toBe(true);

    const trained = await withRuntime(load(), (rt) => trainPolicy(rt, { policy: 'stop' }));
    expect(trained.policy).toMatchObject({ kind: 'stop', version: 1, algorithm: 'linucb' });
    // Stopping at round 1 saves tokens at no loss: the learned policy is valued above never stopping early.
    expect(trained.ope.dr.mean).toBeGreaterThan(trained.noPolicy!.dr.mean);
    expect(trained.ope.snips.mean).toBeGreaterThan(trained.noPolicy!.snips.mean);

    const ev = await withRuntime(load(), (rt) => evaluate(rt, { candidate: 'policy:stop@1' }));
    const metric = (m: string) => ev.comparison.overall.find((x) => x.metric === m)!;
    expect(metric('tokens').candidate!).toBeLessThan(metric('tokens').baseline! * 0.7);
    expect(metric('success').candidate).toBe(metric('success').baseline);
    expect(ev.passed).toBe(true);
    const d = await withRuntime(load(), (rt) => deploy(rt, {}));
    expect(d.action).toBe('promoted');
    const shown = await withRuntime(load(), async (rt) => showSet(rt, 'production'));
    expect(shown.policies).toEqual([
      {
        decision: 'stop',
        policy: expect.objectContaining({
          kind: 'policy',
          name: 'stop',
          version: 1,
          source: 'bandit',
          trainingRun: expect.objectContaining({ id: trained.runId, status: 'completed' }),
        }),
      },
    ]);

    // The deployed policy serves the next collect: its decisions name it, greedy mass plus the ε floor.
    await withRuntime(load(), (rt) => collect(rt));
    store = openStore(load());
    try {
      const prod = store.sets.get(store.sets.pointer('production')!.setId)!;
      expect(prod.members.policies?.stop).toBe(trained.policy.id);
      const after = store.spans
        .policyDecisions('stop')
        .map((r) => r.payload as PolicyDecisionPayload)
        .filter((p) => p.policy_id === trained.policy.id);
      expect(after.length).toBeGreaterThan(0);
      expect(after.every((p) => p.probabilities.every((q) => q >= 0.05 - 1e-9))).toBe(true);
      expect(after.filter((p) => p.round === 1 && p.chosen === 'stop').length).toBeGreaterThan(
        after.filter((p) => p.round === 1).length / 2,
      );
      // A rollout the policy stopped exports as a valid orchestration trace, the decision an orchestrator_decision.
      const stopped = store.spans
        .policyDecisions('stop')
        .find((r) => (r.payload as PolicyDecisionPayload).chosen === 'stop')!;
      const rollout = store.rollouts.get(stopped.rolloutId)!;
      const trace = toOrchestrationTrace(rollout, store.spans.list(rollout.id), store.rewards.list(rollout.id));
      expect(traceProblems(trace)).toEqual([]);
      expect(trace.events.find((e) => e.id === `e${stopped.seq}`)).toMatchObject({
        type: 'orchestrator_decision',
        decision: 'policy:stop',
        chosen: 'stop',
      });
    } finally {
      store.close();
    }
  }, 240_000);

  it('leaves a team without policies exactly as it was: no decisions, no policy spans', async () => {
    server = await startScriptedServer(costlyTeam);
    const load = project(server.baseUrl, '');
    await withRuntime(load(), (rt) => collect(rt, { n: 3 }));
    const store = openStore(load());
    try {
      expect(storeDb(store).prepare("SELECT COUNT(*) FROM spans WHERE name = 'policy_decision'").pluck().get()).toBe(0);
      const rollouts = storeDb(store).prepare('SELECT metadata FROM rollouts').pluck().all() as string[];
      expect(rollouts.every((m) => !('routing' in JSON.parse(m)))).toBe(true);
    } finally {
      store.close();
    }
    await expect(withRuntime(load(), (rt) => trainPolicy(rt, { policy: 'stop' }))).rejects.toThrow(
      /only 0 usable stop decision/,
    );
    await expect(withRuntime(load(), (rt) => trainPolicy(rt, { policy: 'when' }))).rejects.toThrow(
      /unknown policy "when"; choose one of routing, stop, tool, delegate/,
    );
  }, 120_000);
});

/** Agent a answers right on every task; b and c answer wrong; the winner presents its own answer. */
const oneExpert: Script = (req) => {
  const system = req.messages[0]?.content ?? '';
  const shown = shownLabels(req);
  if (system.includes('was selected')) {
    const own = /attempt by (\w)/.exec(JSON.stringify(req.messages))?.[1];
    return { content: own === 'a' || !own ? 'Final answer: 42' : 'Final answer: 7' };
  }
  if (shown.length) return { content: 'VOTE: agent1 | agreed' };
  return { content: `ANSWER: ${req.model === 'a' ? 42 : 7} (attempt by ${req.model})` };
};

describe('a learned routing policy', () => {
  it('learns which agent to send tasks to from explored routing decisions', async () => {
    server = await startScriptedServer(oneExpert);
    const yaml = `models:
  a: { base_url: "${'URL'}", model: a }
  b: { base_url: "${'URL'}", model: b }
  emb: { base_url: "${'URL'}", model: embedder }
agents:
  - { id: a, model: a, tool_mode: text }
  - { id: b, model: b, tool_mode: text }
tasks:
  sources: [{ file: tasks.jsonl }]
rewards:
  weights: { exact: 1 }
collect: { concurrency: 2, split: all }
orchestrator: { agent_timeout_s: 20, total_timeout_s: 60 }
policies: { bootstrap: [routing], routing: { arms: { a: [a], b: [b] } }, embedding_model: emb, cost_per_1k_tokens: 0, min_decisions: 10 }
`.replaceAll('URL', server.baseUrl);
    const dir = tempDir({ 'massgen-rl.yaml': yaml, 'tasks.jsonl': TASKS });
    const load = () => loadConfig({ cwd: dir });
    for (let i = 0; i < 3; i++) await withRuntime(load(), (rt) => collect(rt));
    // Each task is embedded once per rollout through the configured endpoint, and the vector joins the features.
    expect(server.embeddings.length).toBe(36);
    expect(server.embeddings.every((e) => e.model === 'embedder' && e.input.length === 1)).toBe(true);
    const store = openStore(load());
    const first = store.spans.policyDecisions('routing')[0]!.payload as PolicyDecisionPayload;
    store.close();
    expect(first.features.length).toBe(taskFeatureNames(8).length);
    expect(taskFeatureNames(8).length).toBe(taskFeatureNames(0).length + 8);
    const trained = await withRuntime(load(), (rt) => trainPolicy(rt, { policy: 'routing' }));
    expect(trained.armCounts.a! + trained.armCounts.b!).toBe(36);
    expect(trained.armCounts.a).toBeGreaterThan(5);
    expect(trained.armCounts.b).toBeGreaterThan(5);
    // Sending every task to agent a is right every time: the greedy policy is valued near 1, logging near 1/2.
    expect(trained.ope.snips.mean).toBeGreaterThan(0.9);
    expect(trained.ope.logged.mean).toBeLessThan(0.8);
    const ev = await withRuntime(load(), (rt) => evaluate(rt, { candidate: 'policy:routing@1' }));
    expect(ev.comparison.overall.find((x) => x.metric === 'success')!.candidate).toBe(1);
  }, 240_000);
});

describe('a tool policy, and the command line', () => {
  it("puts the tool it draws first among an agent's tools, among that agent's tools only, and records the draw", async () => {
    server = await startScriptedServer(costlyTeam);
    const load = project(
      server.baseUrl,
      `tools:
  calculator: { type: builtin, name: calculator }
  clock: { type: command, command: [date], description: the date }
  shell: { type: command, command: [uname], description: the system }
policies: { bootstrap: [tool] }`,
    );
    const loaded = load();
    await withRuntime(loaded, async (rt) => {
      const set = syncProduction(rt);
      const policies = TeamPolicies.forSet(rt.store(), rt.config.policies, set, 'collect');
      expect(policies.active('tool') && !policies.active('stop') && !policies.active('routing')).toBe(true);
      const agents = team(server!.baseUrl, ['a', 'b']).map((a, i) => ({
        ...a,
        tools: (i ? ['calculator'] : ['calculator', 'clock']).map((name) => ({
          name,
          description: name,
          parameters: {},
        })),
      }));
      const firsts = new Set<string>();
      for (let seed = 1; seed <= 40; seed++) {
        const plan = await planRollout({
          task: { id: 't', prompt: 'What is 2 + 2?', reference: '4' },
          team: agents,
          config: rt.config,
          policies,
          seed,
        });
        // Agent b has one tool: no decision; agent a's decision is among its two tools only.
        expect(plan.spans).toHaveLength(1);
        const d = plan.spans[0]!.payload as PolicyDecisionPayload;
        expect(d).toMatchObject({
          policy: 'tool',
          agent: 'a',
          arms: ['calculator', 'clock', 'shell'],
          available: ['calculator', 'clock'],
          algorithm: 'uniform',
        });
        expect(d.probabilities).toEqual([0.5, 0.5, 0]);
        expect(plan.team[0]!.tools[0]!.name).toBe(d.chosen);
        expect(plan.team[0]!.tools.map((t) => t.name).sort()).toEqual(['calculator', 'clock']);
        expect(plan.team[1]!.tools.map((t) => t.name)).toEqual(['calculator']);
        expect(plan.stopPolicy).toBeUndefined();
        firsts.add(d.chosen);
      }
      expect(firsts).toEqual(new Set(['calculator', 'clock']));
    });
  });

  it("lets the delegate policy decide per rollout whether the delegate tool is offered and to which child team, within the config's limits", async () => {
    server = await startScriptedServer(costlyTeam);
    const base = project(server.baseUrl, 'policies: { bootstrap: [delegate] }');
    const load = () =>
      base(['orchestrator.delegation={enabled: false, max_depth: 2, max_delegations: 3, max_child_tokens: 900}']);
    await withRuntime(load(), async (rt) => {
      const policies = TeamPolicies.forSet(rt.store(), rt.config.policies, syncProduction(rt), 'collect');
      const agents = team(server!.baseUrl, ['a', 'b']);
      const seen = new Map<string, number>();
      for (let seed = 1; seed <= 60; seed++) {
        const plan = await planRollout({
          task: { id: 't', prompt: 'What is 2 + 2?', reference: '4' },
          team: agents,
          config: rt.config,
          policies,
          seed,
        });
        const d = plan.spans[0]!.payload as PolicyDecisionPayload;
        expect(d).toMatchObject({ policy: 'delegate', arms: ['none', 'solo', 'team'] });
        expect(d.propensity).toBeCloseTo(1 / 3);
        expect(plan.delegation).toEqual({
          enabled: d.chosen !== 'none',
          shape: d.chosen === 'none' ? 'team' : d.chosen,
          maxDepth: 2,
          maxDelegations: 3,
          maxChildTokens: 900,
        });
        seen.set(d.chosen, (seen.get(d.chosen) ?? 0) + 1);
      }
      expect([...seen.keys()].sort()).toEqual(['none', 'solo', 'team']);
    });
    // A collect under the policy offers the delegate tool exactly in the rollouts whose decision was not "none".
    await withRuntime(load(), (rt) => collect(rt, { n: 6 }));
    const store = openStore(load());
    try {
      const rows = store.spans.policyDecisions('delegate');
      expect(rows).toHaveLength(6);
      for (const row of rows) {
        const chosen = (row.payload as PolicyDecisionPayload).chosen;
        const prompts = store.spans.list(row.rolloutId).filter((sp) => sp.type === 'prompt');
        const sawTool = prompts.some((sp) => JSON.stringify(sp.payload).includes('delegate'));
        expect(sawTool).toBe(chosen !== 'none');
      }
    } finally {
      store.close();
    }
  }, 120_000);

  it('refuses --policy outside train policy, and train policy without a known kind, with exit 2 and no stack', async () => {
    server = await startScriptedServer(costlyTeam);
    const cwd = path.dirname(project(server.baseUrl, '')().file!);
    const a = await runCli(['train', '--policy', 'stop'], { cwd });
    expect(a.exitCode).toBe(2);
    expect(a.stderr).toContain("unknown option '--policy'");
    const b = await runCli(['train', 'policy'], { cwd });
    expect(b.exitCode).toBe(2);
    expect(b.stderr).toContain("missing required argument 'kind'");
    const c = await runCli(['train', '--algo', 'bandit', '--policy', 'nope'], { cwd });
    expect(c.exitCode).toBe(2);
    expect(c.stderr).toMatch(
      /train --algo bandit is deprecated: use massgen-rl train policy nope\n.*'nope' is invalid for argument 'kind'\. Allowed choices are routing, stop, tool, delegate/,
    );
    expect(hasStack(a.stderr + b.stderr + c.stderr)).toBe(false);
  });
});
