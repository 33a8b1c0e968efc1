import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { runCycle } from '../../src/pipeline/loop/loop.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { trainRoles } from '../../src/pipeline/train/roles.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { runCli, tempDir } from '../helpers.js';
import { LOOP_TASKS, TRAINER } from '../support/loop-project.js';
import { startScriptedServer, type Script, type ScriptedServer } from '../support/scripted-server.js';

// A whole cycle with config roles on a scripted LoRA-serving endpoint and the stand-in trainer. The most common
// answer wins (independent answers); the base gives every call a different wrong answer, the leader's adapter
// one wrong answer, the rest's the right one: the team passes, the rest (two agents of three) passes on its
// own, the leader alone does not, and deploy promotes production with the rest's new adapter only.
let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function script(): Script {
  let wrong = 100;
  return (req) => {
    const right = (req.messages.find((m) => m.role === 'user')?.content ?? '').includes('50 - 9') ? '41' : '42';
    const answer = /^rest-v\d+$/.test(req.model) ? right : /^leader-v\d+$/.test(req.model) ? '7' : String(wrong++);
    return { content: `ANSWER: ${answer}` };
  };
}

function yaml(url: string, roleGates: boolean, extra = ''): string {
  return `models:
  lead: { base_url: "${url}", model: base-model, lora: { line: leader } }
  crew: { base_url: "${url}", model: base-model, lora: { line: rest } }
agents:
  - { id: a, model: lead, tool_mode: text }
  - { id: b, model: crew, tool_mode: text }
  - { id: c, model: crew, tool_mode: text }
tasks:
  sources: [{ file: tasks.jsonl }]
rewards:
  weights: { exact: 1, numeric: 1 }
collect: { concurrency: 2, split: all }
orchestrator: { prompt_layout: independent, agent_timeout_s: 20, total_timeout_s: 60 }
train:
  base_model: ./base
  script: ${TRAINER}
  gates: { min_examples: 1, min_clean_share: 0, min_categories: 1 }
roles:
  leader: { agents: [a], weights: { lora: leader }, recipe: { algo: sft, reward_threshold: null, max_steps: 1 } }
  rest: { agents: [b, c], weights: { lora: rest }, recipe: { algo: sft, reward_threshold: null, max_steps: 1 } }
eval: { split: all, seeds: 2, metric: success_rate, report: false }
deploy:
  role_gates: ${roleGates}
  gates: { min_pairs: 4, min_improvement: 0.1, max_cost_increase: null }
${extra}`;
}

async function cycle(roleGates: boolean, extra = '') {
  server = await startScriptedServer(script());
  const dir = tempDir({
    'massgen-rl.yaml': yaml(server.baseUrl, roleGates, extra),
    'tasks.jsonl': LOOP_TASKS,
    'base/config.json': '{"model_type": "llama"}',
    'base/model.safetensors': 'x'.repeat(64),
  });
  return withRuntime(loadConfig({ cwd: dir }), async (rt) => {
    const r = await runCycle(rt);
    const store = rt.store();
    const production = syncProduction(rt);
    const line = (agent: string) => {
      const w = production.members.agents[agent]!.weights;
      return w ? store.resources.get(w)!.name : null;
    };
    return { r, lines: ['a', 'b', 'c'].map(line), dir };
  });
}

/** Each agent's weight line in production (null: the model's own weights). */
function productionLines(dir: string) {
  return withRuntime(loadConfig({ cwd: dir }), async (rt) => {
    const store = rt.store();
    const production = syncProduction(rt);
    return ['a', 'b', 'c'].map((agent) => {
      const w = production.members.agents[agent]!.weights;
      return w ? store.resources.get(w)!.name : null;
    });
  });
}

describe('a cycle with roles', () => {
  it('trains each role, measures each role on its own and promotes only the roles that pass', async () => {
    const { r, lines } = await cycle(true);
    expect(r.status).toBe('completed');
    const { train, eval: ev, deploy } = r.stages;
    expect(train?.roles?.map((x) => [x.role, x.status])).toEqual([
      ['leader', 'trained'],
      ['rest', 'trained'],
    ]);
    expect(ev?.roles?.map((x) => [x.role, x.passed])).toEqual([
      ['leader', false],
      ['rest', true],
    ]);
    expect(ev?.roles?.[0]?.diff?.mean).toBeCloseTo(0);
    expect(ev?.roles?.[1]?.diff?.mean).toBeCloseTo(1);
    expect(ev?.promoted_roles).toEqual(['rest']);
    expect(ev?.candidate_set).not.toBe(ev?.team_set);
    expect(deploy).toMatchObject({ status: 'done', action: 'promoted' });
    expect(lines).toEqual([null, 'rest', 'rest']);
  }, 180_000);

  it('promotes the whole team when deploy.role_gates is false, and rolls back one role', async () => {
    const { r, lines, dir } = await cycle(false);
    const { eval: ev, deploy } = r.stages;
    expect(ev?.candidate_set).toBe(ev?.team_set);
    expect(ev?.promoted_roles).toEqual(['leader', 'rest']);
    expect(deploy).toMatchObject({ status: 'done', action: 'promoted' });
    expect(lines).toEqual(['leader', 'rest', 'rest']);

    const unknown = await runCli(['rollback', '--role', 'nobody'], { cwd: dir });
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toMatch(/--role nobody: no such role \(roles: leader, rest\)/);
    const back = await runCli(['rollback', '--role', 'leader', '--reason', 'the leader alone does not help'], {
      cwd: dir,
    });
    expect(back.exitCode).toBe(0);
    expect(back.stdout).toMatch(/production is set v\d+ again/);
    expect(await productionLines(dir)).toEqual([null, 'rest', 'rest']);
    const again = await runCli(['rollback', '--role', 'leader', '--to', `set:1`], { cwd: dir });
    expect(again.exitCode).toBe(2);
    expect(again.stderr).toMatch(/role leader serves the same in set v1 as in production/);
  }, 180_000);

  it('applies loop.min_new_traces to every role, and takes a role run that completed before an interruption', async () => {
    const { r, dir } = await cycle(true, 'loop: { min_new_traces: 1000 }\n');
    expect(r.stages.train).toMatchObject({ status: 'skipped' });
    expect(r.stages.train?.reason).toMatch(
      /^no role was trained \(leader: \d+ new completed rollout\(s\) since the last sft run on leader; loop\.min_new_traces is 1000; rest: \d+ new/,
    );
    expect(r.stages.train?.roles?.map((x) => x.status)).toEqual(['skipped', 'skipped']);
    expect(r.stages.eval).toMatchObject({ status: 'skipped', reason: 'no new candidate in this cycle' });

    await withRuntime(loadConfig({ cwd: dir }), async (rt) => {
      const first = await trainRoles(rt);
      const leader = first.roles.find((x) => x.role === 'leader')!;
      expect(leader.status).toBe('trained');
      const runs = rt.store().trainingRuns.latest(50).length;
      // the leader's run is taken as it is; the rest has no new data since its own run
      const again = await trainRoles(rt, { prior: { leader: leader.trainingRunId! }, minNewTraces: 1 });
      expect(again.roles.map((x) => [x.role, x.status, x.trainingRunId ?? null])).toEqual([
        ['leader', 'trained', leader.trainingRunId],
        ['rest', 'skipped', null],
      ]);
      expect(again.roles[0]!.reason).toBe('taken from the completed training run');
      expect(rt.store().trainingRuns.latest(50)).toHaveLength(runs);
      expect(again.candidateSet).not.toBeNull();
    });
  }, 180_000);
});
