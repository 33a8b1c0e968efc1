import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { addFeedback, recomputeRewards } from '../../src/pipeline/utilities/rewards.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { runCli, tempDir } from '../helpers.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function collected() {
  server = await startScriptedServer((req) => {
    if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: 'Final answer: 42' };
    return shownLabels(req).length ? { content: 'VOTE: agent1 | right' } : { content: 'ANSWER: 42' };
  });
  const yaml = `models:\n  stub: { base_url: "${server.baseUrl}", model: m }\nagents:\n  - { id: a, model: stub, tool_mode: text }\n  - { id: b, model: stub, tool_mode: text }\ntasks:\n  sources: [{ file: tasks.jsonl }]\nrewards:\n  weights: { exact: 1, human: 0.5 }\ncollect: { split: all }\n`;
  const dir = tempDir({
    'massgen-rl.yaml': yaml,
    'tasks.jsonl': '{"id":"t1","prompt":"6 x 7?","reference":"42"}\n{"id":"t2","prompt":"6 x 8?","reference":"48"}\n',
  });
  const loaded = loadConfig({ cwd: dir });
  await withRuntime(loaded, (rt) => collect(rt));
  return { dir, loaded };
}

describe('human feedback and reward recompute', () => {
  it('adds a human reward span and row, and folds it into the total with its weight', async () => {
    const { dir, loaded } = await collected();
    const store = openStore(loaded);
    const t1 = store.rollouts.list({ taskId: 't1' })[0]!;
    store.close();
    expect(t1.totalReward).toBe(1);
    // Agent feedback credits that agent (datasets use it); the team total moves only with rollout feedback.
    const fb = await withRuntime(loaded, (rt) =>
      addFeedback(rt, t1.id.slice(0, 14), { score: -1, agent: 'b', note: 'rude' }),
    );
    expect(fb.total).toBeCloseTo(1);
    expect((await withRuntime(loaded, (rt) => addFeedback(rt, t1.id, { score: -1 }))).total).toBeCloseTo(1 - 0.5);
    const check = openStore(loaded);
    try {
      expect(check.rewards.list(t1.id).filter((r) => r.family === 'human')).toEqual([
        expect.objectContaining({ channel: 'agent', agent: 'b', value: -1, reason: 'rude' }),
        expect.objectContaining({ channel: 'rollout', agent: null, value: -1 }),
      ]);
      expect(check.spans.list(t1.id).at(-2)).toMatchObject({
        type: 'reward',
        name: 'human',
        agent: 'b',
        payload: { channel: 'agent', value: -1 },
      });
    } finally {
      check.close();
    }
    const bad = await runCli(['feedback', t1.id, '--score', '1', '--agent', 'zed'], { cwd: dir });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/has no agent "zed"; agents: a, b/);
    expect((await runCli(['feedback', t1.id, '--score', 'lots'], { cwd: dir })).exitCode).toBe(2);
    expect((await runCli(['feedback', 'nope', '--score', '1'], { cwd: dir })).stderr).toMatch(/no rollout "nope"/);
  });

  it('re-scores stored traces after a reward config change, keeping human feedback', async () => {
    const { dir, loaded } = await collected();
    const store = openStore(loaded);
    const [t1, t2] = [store.rollouts.list({ taskId: 't1' })[0]!, store.rollouts.list({ taskId: 't2' })[0]!];
    const otherSpans = store.spans.list(t1.id).filter((s) => s.type !== 'reward').length;
    store.close();
    await withRuntime(loaded, (rt) => addFeedback(rt, t1.id, { score: 2 }));
    const reloaded = loadConfig({ cwd: dir, overrides: ['rewards.weights={exact: 3, f1: 1, human: 0.5}'] });
    const summary = await withRuntime(reloaded, (rt) => recomputeRewards(rt));
    expect(summary).toMatchObject({ rollouts: 2, changed: 1 });
    const after = openStore(reloaded);
    try {
      expect(after.rollouts.get(t1.id)!.totalReward).toBeCloseTo(3 + 1 + 0.5 * 2);
      expect(after.rollouts.get(t2.id)!.totalReward).toBeCloseTo(0);
      const families = new Set(after.rewards.list(t1.id).map((r) => r.family));
      expect([...families].sort()).toEqual(['exact', 'f1', 'human']);
      const spans = after.spans.list(t1.id);
      expect(spans.filter((s) => s.type === 'reward' && s.name === 'human')).toHaveLength(1);
      expect(spans.filter((s) => s.type === 'reward' && s.name === 'f1').length).toBeGreaterThan(0);
      expect(spans.filter((s) => s.type !== 'reward').length).toBe(otherSpans);
      const seqs = spans.map((s) => s.seq);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    } finally {
      after.close();
    }
    const cli = await runCli(['--json', 'rewards', 'recompute'], { cwd: dir });
    expect(JSON.parse(cli.stdout)).toMatchObject({ rollouts: 2 });
  });
});
