import { describe, expect, it } from 'vitest';
import { configSchema, type RLConfigInput } from '../../src/config/schema.js';
import {
  attributeRollout,
  buildRoleDatasets,
  roleContext,
  roleDecisions,
  roleRecord,
  RolloutIndex,
  sameAnswer,
  TraceReader,
  type GrpoRow,
  type PpoRow,
  type RoleContext,
  type SftRow,
  type TraceRecord,
} from '../../src/datasets/index.js';
import type { Store } from '../../src/store/index.js';
import type { Reward, Rollout } from '../../src/trace/records.js';
import { fixtureStore, readRows, teamRollout } from '../fixtures/datasets/team-rollouts.js';

const context = (roles: RLConfigInput['roles']): RoleContext =>
  roleContext(configSchema.parse({ agents: ['a', 'b', 'c'].map((id) => ({ id, model: 'local' })), roles }))!;

const records = (store: Store): TraceRecord[] => [...new TraceReader(store, 0).pages()].flat();

const attributed = (record: TraceRecord) =>
  attributeRollout(new RolloutIndex(record, null), 0.05).map((x) => [x.kind, x.site.agent, x.seq, x.value]);

/** Task mul (42): a answers 41, c answers 42 and wins (votes a → c, b → a, c → c); a's turn has two samples. */
function mixedRollout(store: Store) {
  return teamRollout(store, {
    taskId: 'mul',
    first: { agent: 'a', content: '41' },
    second: { agent: 'c', content: '42' },
    votes: { a: 'c', b: 'a', c: 'c' },
    samples: [
      { content: '42', reward: 1 },
      { content: '40', reward: 0 },
    ],
  });
}

describe('role attribution', () => {
  it('rewards answers right × won, votes by the answer voted for, the presenter for keeping the winning answer', () => {
    const { store } = fixtureStore();
    const r1 = mixedRollout(store);
    // b's right answer loses to c's wrong one; the presenter changes the winning answer (to the right one).
    const r2 = teamRollout(store, {
      taskId: 'mul',
      first: { agent: 'b', content: '42' },
      second: { agent: 'c', content: '43' },
      votes: { a: 'c', b: 'c', c: 'c' },
      presentation: 'Final answer: 42',
    });
    const [one, two] = records(store);
    const samples = one!.spans.filter((s) => s.name === 'sample').map((s) => s.seq);
    expect(attributed(one!)).toEqual([
      ['answer', 'a', r1.seqs.answer_a_1, 0],
      ['answer', 'c', r1.seqs.answer_c_2, 1],
      ['vote', 'a', r1.seqs.vote_a, 1],
      ['vote', 'b', r1.seqs.vote_b, 0],
      ['vote', 'c', r1.seqs.vote_c, 1],
      ['presentation', 'c', r1.seqs.presentation, 1],
      ['sample', 'a', samples[0], 1],
      ['sample', 'a', samples[1], 0],
    ]);
    expect(attributed(two!)).toEqual([
      ['answer', 'b', r2.seqs.answer_b_1, 0.5],
      ['answer', 'c', r2.seqs.answer_c_2, 0],
      ['vote', 'a', r2.seqs.vote_a, 0],
      ['vote', 'b', r2.seqs.vote_b, 0],
      ['vote', 'c', r2.seqs.vote_c, 0],
      ['presentation', 'c', r2.seqs.presentation, 0],
    ]);
    store.close();
  });

  it('credits delegations, nets decisions of cost, and falls back to the outcome for an unverified winning answer', () => {
    const record = handBuilt();
    expect(attributed(record)).toEqual([
      ['answer', 'a', 2, 0.8],
      ['presentation', 'a', 9, 1],
      ['delegation', 'a', 5, 0.6],
      ['decision', null, 7, 0.8 - 0.05 * 2],
    ]);
    const split = context({
      solvers: { agents: ['a', 'b'] },
      helper: { delegate: true },
      router: { policies: ['routing'] },
    });
    const view = (role: string) => roleRecord(record, role, split);
    expect(
      view('helper')
        .spans.filter((s) => s.type === 'prompt')
        .map((s) => s.seq),
    ).toEqual([6]);
    expect(view('helper').rollout).toMatchObject({ totalReward: 0.6, finalAnswer: null });
    expect(
      view('solvers')
        .spans.filter((s) => s.type === 'prompt')
        .map((s) => s.seq),
    ).toEqual([1, 3, 8]);
    expect(view('solvers').rollout).toMatchObject({ totalReward: 0.9, finalAnswer: 'Final answer: yes' });
    expect(view('router').spans.filter((s) => s.type === 'prompt')).toEqual([]);
    expect(view('router').rollout.totalReward).toBeCloseTo(0.7);
    // No role claims the delegated sub-tasks: they are the delegating agent's role's, credit included.
    const together = roleRecord(record, 'solvers', context({ solvers: { agents: ['a', 'b'] } }));
    expect(together.spans.filter((s) => s.type === 'prompt').map((s) => s.seq)).toEqual([1, 3, 6, 8]);
    expect(together.rollout.totalReward).toBeCloseTo((0.8 + 1 + 0.6) / 3);
  });

  it('compares answers by final answer, else by final number', () => {
    expect(sameAnswer('Final answer: 42', '6 x 7 = 42')).toBe(true);
    expect(sameAnswer('Final answer: 6 x 7 = 42', '6 x 7 = 42')).toBe(true);
    expect(sameAnswer('Final answer: Paris.', 'paris')).toBe(true);
    expect(sameAnswer('Final answer: 43', '42')).toBe(false);
    expect(sameAnswer('Final answer: Lyon', 'Paris')).toBe(false);
  });
});

describe('role datasets', () => {
  it("build each role's rows from its own members' calls of one rollout, with the rewards attributed to it", async () => {
    const { store, dir } = fixtureStore();
    const r = mixedRollout(store);
    const ctx = context({
      solvers: { agents: ['a', 'b'], weights: { lora: 's' }, recipe: { algo: 'grpo' } },
      judge: { agents: ['c'], weights: { lora: 'j' }, recipe: { algo: 'ppo' } },
      pres: { presenter: true, weights: { lora: 'p' }, recipe: { algo: 'sft', reward_threshold: null } },
      router: { policies: ['routing'], recipe: { algo: 'bandit' } },
    });
    const built = await buildRoleDatasets(store, { context: ctx, dataDir: dir });
    expect(built.map((b) => [b.role, b.algo])).toEqual([
      ['solvers', 'grpo'],
      ['judge', 'ppo'],
      ['pres', 'sft'],
    ]);
    const [solvers, judge, pres] = built.map((b) => b.result.dir);
    const groups = readRows<GrpoRow>(solvers!);
    // a's round-1 turn with its samples, and a's and b's identical vote prompts; no call of c's.
    expect(groups.map((g) => g.completions.map((c) => [c.meta.agent, c.meta.kind, c.reward]))).toEqual([
      [
        ['a', 'answer', 0],
        ['a', 'sample', 1],
        ['a', 'sample', 0],
      ],
      [
        ['a', 'vote', 1],
        ['b', 'vote', 0],
      ],
    ]);
    const transitions = readRows<PpoRow>(judge!);
    expect(transitions.map((t) => [t.meta.agent, t.meta.seq, t.return])).toEqual([
      ['c', r.seqs.prompt_c_2, 1],
      ['c', r.seqs.vote_c! - 1, 1],
    ]);
    const presented = readRows<SftRow>(pres!);
    expect(presented.map((x) => [x.meta.kind, x.meta.agent, x.reward])).toEqual([['presentation', 'c', 1]]);
    store.close();
  });

  it('take a watermark per role, and only the roles asked for', async () => {
    const { store, dir } = fixtureStore();
    const first = mixedRollout(store);
    const second = mixedRollout(store);
    const ctx = context({
      solvers: { agents: ['a', 'b'], weights: { lora: 's' }, recipe: { algo: 'ppo' } },
      judge: { agents: ['c'], weights: { lora: 'j' }, recipe: { algo: 'ppo' } },
    });
    const built = await buildRoleDatasets(store, {
      context: ctx,
      dataDir: dir,
      perRole: { judge: { sinceWatermark: 1 } },
    });
    const rollouts = (i: number) => [...new Set(readRows<PpoRow>(built[i]!.result.dir).map((t) => t.meta.rollout_id))];
    expect(rollouts(0)).toEqual([first.id, second.id]);
    expect(rollouts(1)).toEqual([second.id]);
    expect(built[1]!.result.watermark).toBe(2);
    const judged = await buildRoleDatasets(store, { context: ctx, dataDir: dir, only: ['judge'] });
    expect(judged.map((b) => b.role)).toEqual(['judge']);
    store.close();
  });

  it("give a bandit role its policies' logged decisions, each the outcome net of the recipe's cost", () => {
    const { store } = fixtureStore();
    const id = store.rollouts.start({ source: 'collect', metadata: {} });
    const decision = (policy: string) => ({
      type: 'coordination' as const,
      name: 'policy_decision',
      agent: null,
      payload: { policy, chosen: 'team', propensity: 0.5 },
    });
    store.spans.append(id, [decision('routing'), decision('stop')]);
    store.rewards.add(id, [{ channel: 'rollout', family: 'exact', value: 1 }]);
    store.rollouts.finish(id, {
      status: 'completed',
      totalReward: 0.5,
      tokens: 1000,
      toolCalls: 0,
      messages: 2,
      wallMs: 1,
    });
    const ctx = context({ router: { policies: ['routing'], recipe: { algo: 'bandit', cost_per_1k_tokens: 0.2 } } });
    expect(roleDecisions(store, ctx, 'router').map((d) => [d.kind, d.seq, d.reward])).toEqual([['routing', 1, 0.8]]);
    expect(roleDecisions(store, ctx, 'nobody')).toEqual([]);
    store.close();
  });
});

/**
 * a answers "yes" and wins, b answers "no" (no reference: nothing verified, the rollout total 0.8 is the
 * outcome); a delegates a sub-task (credit 0.6) whose child call is seq 6; a routing decision; a presents.
 */
function handBuilt(): TraceRecord {
  const prompt = (seq: number, agent: string, reply: string, name = 'chat', mark = {}) => ({
    seq,
    type: 'prompt' as const,
    name,
    agent,
    payload: JSON.stringify({
      turn_id: `t${seq}`,
      round: 1,
      attempt: 1,
      request: { model: 'm', messages: [{ role: 'user', content: 'Is it?' }], temperature: 0.7 },
      response: { content: reply, tool_calls: [], finish_reason: 'stop' },
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
      latency_ms: 1,
      ...mark,
    }),
  });
  const coordination = (seq: number, name: string, agent: string | null, payload: object) => ({
    seq,
    type: 'coordination' as const,
    name,
    agent,
    payload: JSON.stringify(payload),
  });
  const answer = (seq: number, agent: string, content: string, label: string) =>
    coordination(seq, 'new_answer', agent, {
      turn_id: `t${seq - 1}`,
      label,
      content,
      round: 1,
      answer_labels_seen: [],
      prompt_seq: seq - 1,
    });
  const reward = (r: Partial<Reward>, i: number): Reward => ({
    id: i + 1,
    rolloutId: 'r1',
    createdAt: 0,
    reason: null,
    agent: null,
    targetSeq: null,
    channel: 'rollout',
    family: 'coordination',
    value: 0,
    ...r,
  });
  const rollout = {
    num: 1,
    id: 'r1',
    runId: null,
    taskId: null,
    source: 'collect',
    status: 'completed',
    error: null,
    finalAnswer: 'Final answer: yes',
    winner: 'a',
    totalReward: 0.8,
    tokens: 2000,
    toolCalls: 0,
    messages: 5,
    wallMs: 1,
    metadata: {},
    resourceSetId: null,
    startedAt: 0,
    finishedAt: 1,
  } satisfies Rollout;
  return {
    rollout,
    task: null,
    spans: [
      prompt(1, 'a', 'ANSWER: yes'),
      answer(2, 'a', 'yes', 'agent1'),
      prompt(3, 'b', 'ANSWER: no'),
      answer(4, 'b', 'no', 'agent2'),
      coordination(5, 'delegate', 'a', { agent: 'a', task: 'check', child_depth: 1 }),
      prompt(6, 'a', 'ANSWER: checked', 'chat', { depth: 1, delegate_seq: 5 }),
      coordination(7, 'policy_decision', null, { policy: 'routing', chosen: 'team' }),
      prompt(8, 'a', 'Final answer: yes', 'presentation'),
      coordination(9, 'presentation', 'a', { content: 'Final answer: yes', prompt_seq: 8 }),
    ],
    rewards: [
      reward({ value: 0.8 }, 0),
      reward({ channel: 'turn', family: 'delegation', value: 0.6, agent: 'a', targetSeq: 5 }, 1),
    ],
  };
}
