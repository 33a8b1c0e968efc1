import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { runCli, tempDir } from '../helpers.js';
import { startScriptedServer, type Script, type ScriptedServer } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const TASKS = [
  { id: 'mul', prompt: 'What is 6 x 7?', reference: '42', category: 'arithmetic' },
  { id: 'add', prompt: 'What is 40 + 2?', reference: '42', category: 'arithmetic' },
  { id: 'sub', prompt: 'What is 50 - 9?', reference: '41', category: 'arithmetic' },
]
  .map((t) => JSON.stringify(t))
  .join('\n');

async function project(script: Script, extra = '') {
  server = await startScriptedServer(script);
  const yaml = `models:
  stub: { base_url: "${server.baseUrl}", model: stub-model, api_key_env: STUB_KEY }
agents:
  - { id: a, model: stub, tool_mode: text }
  - { id: b, model: stub, tool_mode: text }
  - { id: c, model: stub, tool_mode: text }
tasks:
  sources: [{ file: tasks.jsonl }]
rewards:
  weights: { exact: 1, numeric: 1, coordination: 0.2, voting: 0.5, peer_vote: 0.2 }
collect: { concurrency: 2, split: all }
orchestrator: { agent_timeout_s: 5, total_timeout_s: 30 }
${extra}`;
  const dir = tempDir({ 'massgen-rl.yaml': yaml, 'tasks.jsonl': TASKS });
  return { dir, loaded: loadConfig({ cwd: dir, env: { ...process.env, STUB_KEY: 'sk-stub-secret-key-0123456789' } }) };
}

/** Everyone answers 42 (duplicates are corrected into votes); the presentation restates it. */
const answer42: Script = (req) => {
  if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: 'Final answer: 42' };
  return shownLabels(req).length
    ? { content: 'VOTE: agent1 | correct, unlike sk-stub-secret-key-0123456789' }
    : { content: 'ANSWER: 42' };
};

describe('collect (scripted endpoint, real store and rewards)', () => {
  it('records every orchestration with spans, rewards, costs and a run summary', async () => {
    const { loaded } = await project(answer42);
    const progress: number[] = [];
    const summary = await withRuntime(loaded, (rt) => collect(rt, { onProgress: (p) => progress.push(p.done) }));
    expect(summary).toMatchObject({
      status: 'completed',
      tasks: 3,
      completed: 3,
      failed: 0,
      successRate: 1,
      consensusRate: 1,
    });
    expect(summary.correctRate).toBeCloseTo(2 / 3);
    expect(progress).toEqual([1, 2, 3]);
    expect(summary.tokens).toBeGreaterThan(0);

    const store = openStore(loaded);
    try {
      const run = store.collectRuns.get(summary.runId)!;
      expect(run).toMatchObject({ status: 'completed', result: expect.objectContaining({ completed: 3 }) });
      expect(store.tasks.count()).toBe(3);
      const rollouts = store.rollouts.list({ runId: summary.runId });
      expect(rollouts).toHaveLength(3);
      const mul = rollouts.find((r) => r.taskId === 'mul')!;
      expect(mul).toMatchObject({ status: 'completed', winner: 'a', finalAnswer: 'Final answer: 42' });
      expect(mul.metadata).toMatchObject({
        agents: ['a', 'b', 'c'],
        labels: { a: 'agent1', b: 'agent2', c: 'agent3' },
      });
      expect(mul.tokens).toBeGreaterThan(0);
      expect(mul.messages).toBeGreaterThanOrEqual(4);
      const spans = store.spans.list(mul.id);
      expect(spans.map((s) => s.seq)).toEqual(spans.map((_, i) => i + 1));
      const names = new Set(spans.map((s) => `${s.type}:${s.name}`));
      for (const n of [
        'coordination:round',
        'prompt:chat',
        'coordination:new_answer',
        'coordination:vote',
        'coordination:final_selection',
        'coordination:presentation',
        'reward:exact',
        'reward:coordination',
      ]) {
        expect(names, n).toContain(n);
      }
      const vote = spans.find((s) => s.name === 'vote')!.payload as { reason: string };
      expect(vote.reason).toBe('correct, unlike [REDACTED]');
      const prompt = spans.find((s) => s.type === 'prompt')!.payload as Record<string, unknown>;
      expect(prompt).toMatchObject({
        usage: expect.objectContaining({ total_tokens: expect.any(Number) }),
        token_ids: expect.any(Array),
        logprobs: expect.any(Array),
      });
      const rewards = store.rewards.list(mul.id);
      expect(rewards.find((r) => r.family === 'exact' && r.channel === 'rollout')?.value).toBe(1);
      expect(rewards.filter((r) => r.channel === 'turn' && r.family === 'voting').length).toBeGreaterThanOrEqual(2);
      expect(rewards.some((r) => r.channel === 'agent' && r.agent === 'a')).toBe(true);
      expect(mul.totalReward).toBeGreaterThan(rollouts.find((r) => r.taskId === 'sub')!.totalReward!);
      const prompts = store.resources.list('prompt');
      expect(prompts.map((p) => [p.name, p.version])).toEqual([['solver', 1]]);
      expect(mul.metadata.prompts).toEqual({ a: prompts[0]!.id, b: prompts[0]!.id, c: prompts[0]!.id });
    } finally {
      store.close();
    }
    expect(server!.headers[0]!.authorization).toBe('Bearer sk-stub-secret-key-0123456789');
  });

  it('marks running rollouts and the run cancelled when interrupted', async () => {
    const { loaded } = await project(() => ({ hang: true }));
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const summary = await withRuntime(loaded, (rt) => collect(rt, { signal: ac.signal }));
    expect(summary).toMatchObject({ status: 'cancelled', completed: 0, cancelled: 3 });
    const store = openStore(loaded);
    try {
      expect(store.rollouts.list().map((r) => r.status)).toEqual(['cancelled', 'cancelled']);
      expect(store.collectRuns.get(summary.runId)!.status).toBe('cancelled');
    } finally {
      store.close();
    }
  });

  it('prints a summary table and JSON from the CLI, and rejects bad task options', async () => {
    const { dir } = await project(answer42);
    const env = { ...process.env, STUB_KEY: 'sk-stub-secret-key-0123456789' };
    const r = await runCli(['--json', 'collect', '--n', '2'], { cwd: dir, env });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ tasks: 2, completed: 2 });
    const table = await runCli(['collect', '--n', '1'], { cwd: dir, env });
    expect(table.stdout).toMatch(/tasks[\s\S]*success[\s\S]*mean reward[\s\S]*consensus[\s\S]*1\/1 \(100%\)/);
    const bad = await runCli(['collect', '--tasks', 'nonsense.jsonl'], { cwd: dir, env });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/--tasks nonsense\.jsonl: not a built-in suite/);
    expect((await runCli(['collect', '--n', 'zero'], { cwd: dir, env })).exitCode).toBe(2);
    const noKey = await runCli(['collect'], { cwd: dir, env: { ...process.env, STUB_KEY: '' } });
    expect(noKey.exitCode).toBe(2);
    expect(noKey.stderr).toMatch(/models\.stub\.api_key_env: environment variable STUB_KEY is not set/);
  });
});
