import { describe, expect, it } from 'vitest';
import { buildDataset, type PpoRow } from '../../src/datasets/index.js';
import { fixtureStore, readRows, teamRollout } from '../fixtures/datasets/team-rollouts.js';

describe('PPO dataset', () => {
  it('emits one transition per LLM call with the final reward credited to every turn', async () => {
    const { store, dir } = fixtureStore();
    const r = teamRollout(store, { taskId: 'mul', first: { agent: 'a', content: '42' }, total: 2 });
    const built = await buildDataset(store, { algo: 'ppo', dataDir: dir });
    const rows = readRows<PpoRow>(built.dir);
    // Cancelled calls (b and c in round 1) have no response and are left out.
    expect(rows.map((x) => [x.meta.agent, x.meta.name, x.completion, x.reward, x.return])).toEqual([
      ['a', 'chat', 'ANSWER: 42', 0, 2],
      ['a', 'chat', 'VOTE: agent1 | best answer', 0, 2],
      ['b', 'chat', 'VOTE: agent1 | best answer', 2, 2],
      ['c', 'chat', 'VOTE: agent1 | best answer', 2, 2],
      ['a', 'presentation', 'Final answer: 42', 2, 2],
    ]);
    expect(rows[0]).toMatchObject({
      token_ids: [100, 101],
      logprobs: [-0.25, -0.25],
      meta: { rollout_id: r.id, seq: r.seqs.prompt_a_1, t: 0, T: 2, credit: 'final', final_reward: 2, turn_id: 't1' },
    });
    expect(rows[0]!.prompt.map((m) => m.role)).toEqual(['system', 'user']);
    expect(rows.map((x) => x.meta.seq)).toEqual([...rows.map((x) => x.meta.seq as number)].sort((a, b) => a - b));
    expect(built.stats.counts).toEqual({ transitions: 5 });
    store.close();
  });

  it('discounts by gamma^(T−t) over each agent’s own turns', async () => {
    const { store, dir } = fixtureStore();
    teamRollout(store, { taskId: 'mul', first: { agent: 'a', content: '42' }, total: 2 });
    const built = await buildDataset(store, {
      algo: 'ppo',
      dataDir: dir,
      options: { ppo: { credit: 'discounted', gamma: 0.5 } },
    });
    const rows = readRows<PpoRow>(built.dir);
    expect(rows.map((x) => [x.meta.agent, x.meta.t, x.meta.T, x.return])).toEqual([
      ['a', 0, 2, 0.5],
      ['a', 1, 2, 1],
      ['b', 0, 0, 2],
      ['c', 0, 0, 2],
      ['a', 2, 2, 2],
    ]);
    store.close();
  });

  it('marks transitions of agents with invalid actions or drops unclean; filters agents; needs a final reward', async () => {
    const { store, dir } = fixtureStore();
    teamRollout(store, { taskId: 'cap', first: { agent: 'a', content: 'Paris' }, invalid: ['b'], drop: 'c' });
    teamRollout(store, { taskId: 'mul', first: { agent: 'a', content: '42' }, total: null });
    const built = await buildDataset(store, { algo: 'ppo', dataDir: dir });
    // cap: a answers, votes, presents (clean); b's invalid reply and vote (not clean); c was dropped. mul: no total.
    expect(built.stats).toMatchObject({ rows: 5, clean_rows: 3, dropped: { no_reward: 5 } });
    const onlyB = await buildDataset(store, { algo: 'ppo', dataDir: dir, options: { ppo: { agents: ['b'] } } });
    expect(readRows<PpoRow>(onlyB.dir).map((x) => x.completion)).toEqual([
      'I think both are fine.',
      'VOTE: agent1 | best answer',
    ]);
    expect(onlyB.stats.clean_share).toBe(0);
    store.close();
  });
});
