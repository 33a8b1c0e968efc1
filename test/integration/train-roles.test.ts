import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { trainRoles } from '../../src/pipeline/train/roles.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { FIXTURES, runCli, tempDir } from '../helpers.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';
import { TEAM_TASKS, teamScript } from '../support/team-collect.js';

// One cycle's training with config roles, through the real pipeline and a stand-in trainer script run by the
// trainer venv's Python: each role's dataset from its own agents' calls, its own line, the combined candidate.
const TRAINER = path.join(FIXTURES, 'trainers', 'protocol_trainer.py');

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  delete process.env.FAKE_TRAINER_RECORD;
});

const DPO_REST = '{ algo: dpo, pairs: correctness, max_steps: 2 }';

function yaml(url: string, rest = DPO_REST): string {
  const line = (x: string) => (x === 'a' ? 'leader' : 'rest');
  const models = ['a', 'b', 'c']
    .map(
      (x) => `  stub_${x}: { base_url: "${url}", model: model-${x}, lora: { line: ${line(x)}, load_adapters: false } }`,
    )
    .join('\n');
  return `models:
${models}
agents:
${['a', 'b', 'c'].map((x) => `  - { id: ${x}, model: stub_${x}, tool_mode: text }`).join('\n')}
tasks:
  sources: [{ file: tasks.jsonl }]
rewards:
  weights: { exact: 1, numeric: 1 }
collect: { concurrency: 1, split: all }
orchestrator: { agent_timeout_s: 5, total_timeout_s: 30 }
train:
  base_model: ./base
  script: ${TRAINER}
  gates: { min_examples: 2, min_clean_share: 0, min_categories: 1 }
roles:
  leader: { agents: [a], weights: { lora: leader }, recipe: { algo: sft, max_steps: 2 } }
  rest: { agents: [b, c], weights: { lora: rest }, recipe: ${rest} }
`;
}

async function project(rest?: string): Promise<{ dir: string; load: () => ReturnType<typeof loadConfig> }> {
  server = await startScriptedServer(teamScript);
  const dir = tempDir({
    'massgen-rl.yaml': yaml(server.baseUrl, rest),
    'tasks.jsonl': TEAM_TASKS,
    'base/config.json': '{"model_type": "llama"}',
    'base/model.safetensors': 'x'.repeat(1024),
  });
  process.env.FAKE_TRAINER_RECORD = path.join(dir, 'trainer-configs.jsonl');
  const load = () => loadConfig({ cwd: dir });
  await withRuntime(load(), (rt) => collect(rt));
  return { dir, load };
}

describe('train with roles', () => {
  it('`train weights` trains the roles (a table, or --json) and refuses the one-team flags', async () => {
    const { dir } = await project('{ algo: sft, reward_threshold: null, max_steps: 1 }');
    const refused = await runCli(['train', 'weights', '--algo', 'dpo'], { cwd: dir });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toMatch(/--algo: with roles, each role trains with its own recipe/);
    expect(refused.stderr).not.toMatch(/\bat \w+ \(/);
    const env = { FAKE_TRAINER_RECORD: process.env.FAKE_TRAINER_RECORD };
    const table = await runCli(['train', 'weights'], { cwd: dir, env });
    expect(table.exitCode).toBe(0);
    expect(table.stdout).toMatch(/leader\s+│ sft\s+│ leader\s+│ trained/);
    expect(table.stdout).toMatch(/candidate: set v\d+/);
    await withRuntime(loadConfig({ cwd: dir }), (rt) => collect(rt));
    const json = await runCli(['train', 'weights', '--json'], { cwd: dir, env });
    const out = JSON.parse(json.stdout) as { roles: { role: string; status: string }[]; candidateSet: unknown };
    expect(out.roles.map((r) => [r.role, r.status])).toEqual([
      ['leader', 'trained'],
      ['rest', 'trained'],
    ]);
    expect(out.candidateSet).toMatchObject({ version: expect.any(Number) });
  }, 120_000);

  it("combines every trained role's new weights into one candidate", async () => {
    const { load } = await project('{ algo: sft, reward_threshold: null, max_steps: 1 }');
    const { result, candidate } = await withRuntime(load(), async (rt) => {
      const result = await trainRoles(rt);
      return { result, candidate: rt.store().sets.byVersion(result.candidateSet!.version)! };
    });
    expect(result.roles.map((r) => [r.role, r.status])).toEqual([
      ['leader', 'trained'],
      ['rest', 'trained'],
    ]);
    const [leader, rest] = result.roles.map((r) => r.result!);
    expect(candidate.members.agents.a!.weights).toBe(leader!.checkpoint.resourceId);
    expect(candidate.members.agents.b!.weights).toBe(rest!.checkpoint.resourceId);
    expect(candidate.members.agents.c!.weights).toBe(rest!.checkpoint.resourceId);
    expect(candidate.origin).toMatchObject({
      kind: 'training',
      roles: { leader: { training_run_id: leader!.runId }, rest: { training_run_id: rest!.runId } },
    });
  }, 120_000);

  it("trains each role's line on its own calls and skips a role without data, with the reason", async () => {
    const { dir, load } = await project();
    const stages: string[] = [];
    const { result, production, candidate, leaderRes } = await withRuntime(load(), async (rt) => {
      const result = await trainRoles(rt, { onStage: (m) => stages.push(m) });
      const store = rt.store();
      const candidate = store.sets.byVersion(result.candidateSet!.version)!;
      const leaderRes = store.resources.get(candidate.members.agents.a!.weights!)!;
      return { result, production: syncProduction(rt), candidate, leaderRes };
    });
    const [leader, rest] = result.roles;
    expect(leader).toMatchObject({ role: 'leader', algo: 'sft', line: 'leader', status: 'trained' });
    expect(leader!.result).toMatchObject({ weight: { name: 'leader', version: 1 }, steps: 2 });
    // b's answers are wrong and c's was cut off: no verified-right answer of theirs to prefer.
    expect(rest).toMatchObject({ role: 'rest', algo: 'dpo', status: 'skipped' });
    expect(rest!.reason).toMatch(/no dpo examples/);
    expect(stages).toContain('role leader: sft on line leader');

    // The leader's rows are agent a's calls only (its answers and the presentation it gave as the winner).
    const rows = fs
      .readFileSync(path.join(leader!.result!.dataset.dir, 'data.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { meta: { agent: string } });
    expect(rows.length).toBeGreaterThanOrEqual(3);
    expect(new Set(rows.map((r) => r.meta.agent))).toEqual(new Set(['a']));
    const [cfg] = fs
      .readFileSync(process.env.FAKE_TRAINER_RECORD!, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(cfg).toMatchObject({ max_steps: 2, model_path: path.join(dir, 'base') });

    // The candidate: production with agent a on the leader line; b and c as production serves them.
    expect(leaderRes).toMatchObject({ name: 'leader', kind: 'weight' });
    expect(candidate.members.agents.b).toEqual(production.members.agents.b);
    expect(candidate.members.agents.c).toEqual(production.members.agents.c);
    // One role trained: the combined candidate is that role's own run's set (a set is stored once).
    expect(result.candidateSet).toEqual(leader!.result!.candidateSet);
    expect(candidate.origin).toMatchObject({ kind: 'training', training_run_id: leader!.result!.runId });
  }, 120_000);
});
