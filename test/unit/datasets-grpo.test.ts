import { describe, expect, it } from 'vitest';
import { buildDataset, type GrpoRow } from '../../src/datasets/index.js';
import { fixtureStore, readRows, teamRollout } from '../fixtures/datasets/team-rollouts.js';

describe('GRPO dataset', () => {
  it('groups completions of identical prompts across rollouts, with group-relative advantages', async () => {
    const { store, dir } = fixtureStore();
    const r1 = teamRollout(store, { taskId: 'mul', first: { agent: 'a', content: '42' } });
    const r2 = teamRollout(store, {
      taskId: 'mul',
      first: { agent: 'b', content: '41' },
      votes: { a: 'b', b: 'b', c: 'b' },
    });
    const built = await buildDataset(store, { algo: 'grpo', dataDir: dir });
    const rows = readRows<GrpoRow>(built.dir);
    // Round 1: a (r1) and b (r2) saw the same first-round prompt; their votes saw different answers.
    expect(rows).toHaveLength(1);
    const [g] = rows;
    expect(g!.group_id).toMatch(/^[0-9a-f]{16}$/);
    expect(g!.prompt.map((m) => m.role)).toEqual(['system', 'user']);
    expect(g!.prompt[1]!.content).toContain('(no answers yet)');
    expect(g!.completions.map((c) => [c.content, c.reward, c.advantage])).toEqual([
      ['ANSWER: 42', 1, 1],
      ['ANSWER: 41', 0, -1],
    ]);
    expect(g!.completions[0]).toMatchObject({
      token_ids: [100, 101],
      logprobs: [-0.25, -0.25],
      meta: {
        rollout_id: r1.id,
        agent: 'a',
        seq: r1.seqs.prompt_a_1,
        kind: 'answer',
        turn_id: 't1',
        attempt: 1,
        model: 'stub-model',
      },
    });
    expect(g!.completions[1]!.meta).toMatchObject({ rollout_id: r2.id, agent: 'b', task_id: 'mul' });
    // Each rollout's final-round votes form a group whose rewards are all equal: dropped and counted.
    expect(built.stats.dropped).toMatchObject({ zero_variance_group: 2 });
    expect(built.stats.counts).toEqual({ groups: 1, completions: 2 });
    expect(built.stats).toMatchObject({ rows: 1, rollouts_used: 2 });
    store.close();
  });

  it('scales by the population std (advantages have mean 0 and unit variance)', async () => {
    const { store, dir } = fixtureStore();
    teamRollout(store, {
      taskId: 'mul',
      first: { agent: 'a', content: '42' },
      second: { agent: 'c', content: '41' },
      votes: { a: 'a', b: 'a', c: 'c' },
    });
    const rows = readRows<GrpoRow>((await buildDataset(store, { algo: 'grpo', dataDir: dir })).dir);
    // The final-round votes: a and b for the winner (+1), c for itself (−0.5).
    expect(rows).toHaveLength(1);
    const adv = rows[0]!.completions.map((c) => c.advantage);
    expect(rows[0]!.completions.map((c) => [c.meta.agent, c.meta.kind, c.reward])).toEqual([
      ['a', 'vote', 1],
      ['b', 'vote', 1],
      ['c', 'vote', -0.5],
    ]);
    expect(adv.reduce((a, b) => a + b, 0)).toBeCloseTo(0, 12);
    expect(adv.reduce((a, b) => a + b * b, 0) / adv.length).toBeCloseTo(1, 12);
    expect(adv[0]).toBeCloseTo(Math.SQRT1_2, 12);
    store.close();
  });

  it('groups k samples per turn with the chat span of the same turn; drops unrewarded samples and small groups', async () => {
    const { store, dir } = fixtureStore();
    const r = teamRollout(store, {
      taskId: 'cap',
      first: { agent: 'a', content: 'Paris' },
      samples: [
        { content: 'Lyon', reward: 0 },
        { content: 'Paris!', reward: 0.5 },
        { content: 'Nice', reward: null },
      ],
    });
    const built = await buildDataset(store, { algo: 'grpo', dataDir: dir });
    const rows = readRows<GrpoRow>(built.dir);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.completions.map((c) => [c.content, c.reward, c.meta.kind, c.meta.turn_id])).toEqual([
      ['ANSWER: Paris', 1, 'answer', 't1'],
      ['ANSWER: Lyon', 0, 'sample', 't1'],
      ['ANSWER: Paris!', 0.5, 'sample', 't1'],
    ]);
    expect(rows[0]!.completions.map((c) => c.meta.rollout_id)).toEqual([r.id, r.id, r.id]);
    expect(built.stats.dropped).toMatchObject({ unrewarded_sample: 1, zero_variance_group: 1 });
    const bigger = await buildDataset(store, { algo: 'grpo', dataDir: dir, options: { grpo: { min_group_size: 4 } } });
    expect(bigger.stats).toMatchObject({ rows: 0, dropped: { small_group: 2 } }); // the 3 samples' group and the 3 votes
    store.close();
  });

  it('filters agents, and yields nothing from an empty store', async () => {
    const { store, dir } = fixtureStore();
    expect((await buildDataset(store, { algo: 'grpo', dataDir: dir })).stats.rows).toBe(0);
    teamRollout(store, {
      taskId: 'mul',
      first: { agent: 'a', content: '42' },
      second: { agent: 'c', content: '41' },
      votes: { a: 'a', b: 'a', c: 'c' },
    });
    const onlyAB = await buildDataset(store, { algo: 'grpo', dataDir: dir, options: { grpo: { agents: ['a', 'b'] } } });
    expect(onlyAB.stats.rows).toBe(0);
    expect(onlyAB.stats.dropped).toMatchObject({ zero_variance_group: 1 });
    const bc = await buildDataset(store, { algo: 'grpo', dataDir: dir, options: { grpo: { agents: '[bc]' } } });
    expect(readRows<GrpoRow>(bc.dir)[0]!.completions.map((c) => c.meta.agent)).toEqual(['b', 'c']);
    store.close();
  });
});
