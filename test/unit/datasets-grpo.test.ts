import { describe, expect, it } from 'vitest';
import { buildDataset, type GrpoRow } from '../../src/datasets/index.js';
import type { Store } from '../../src/store/index.js';
import { fixtureStore, readRows, teamRollout, type AgentId } from '../fixtures/datasets/team-rollouts.js';

/** A resource set serving agents a, b, c with these weight resource ids (null: a model served elsewhere). */
function servedBy(store: Store, weights: Record<AgentId, string | null>): string {
  const agents = Object.fromEntries(
    Object.entries(weights).map(([id, w]) => [
      id,
      { prompt: 'prompt-1', weights: w, from_config: { prompt: true, weights: true } },
    ]),
  );
  return store.sets.add({ agents }, { kind: 'config' }).id;
}

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
      temperature: 0.7,
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

  it('records each completion temperature, keeps temperatures in separate groups and leaves greedy ones out', async () => {
    const { store, dir } = fixtureStore();
    teamRollout(store, { taskId: 'mul', first: { agent: 'a', content: '42' }, temperature: { a: 0 } });
    teamRollout(store, { taskId: 'mul', first: { agent: 'b', content: '41' } });
    teamRollout(store, { taskId: 'mul', first: { agent: 'c', content: '42' } });
    teamRollout(store, { taskId: 'mul', first: { agent: 'b', content: '42' }, temperature: { b: null } });
    teamRollout(store, { taskId: 'mul', first: { agent: 'c', content: '41' }, temperature: { c: 1 } });
    const built = await buildDataset(store, { algo: 'grpo', dataDir: dir });
    const rows = readRows<GrpoRow>(built.dir);
    // The same first-round prompt at 0.7 and at 1 (a request naming none samples at the API default, 1).
    expect(rows.map((g) => g.completions.map((c) => [c.content, c.temperature, c.meta.agent]))).toEqual([
      [
        ['ANSWER: 41', 0.7, 'b'],
        ['ANSWER: 42', 0.7, 'c'],
      ],
      [
        ['ANSWER: 42', 1, 'b'],
        ['ANSWER: 41', 1, 'c'],
      ],
    ]);
    expect(rows[0]!.group_id).not.toBe(rows[1]!.group_id);
    expect(rows[0]!.prompt).toEqual(rows[1]!.prompt);
    // a decoded greedily in the first rollout: its answer and its vote.
    expect(built.stats.dropped).toMatchObject({ greedy: 2 });
    store.close();
  });

  it('with the start weights, keeps only completions those weights served', async () => {
    const { store, dir } = fixtureStore();
    const base = store.resources.add({ kind: 'weight', name: 'base', path: '/w/base' }).id;
    const again = store.resources.add({ kind: 'weight', name: 'base-folder', path: '/w/base' }).id;
    const other = store.resources.add({ kind: 'weight', name: 'tuned', path: '/w/tuned' }).id;
    const r1 = teamRollout(store, {
      taskId: 'mul',
      first: { agent: 'a', content: '42' },
      resourceSetId: servedBy(store, { a: base, b: base, c: base }),
    });
    teamRollout(store, {
      taskId: 'mul',
      first: { agent: 'b', content: '41' },
      resourceSetId: servedBy(store, { a: other, b: other, c: other }),
    });
    const r3 = teamRollout(store, {
      taskId: 'mul',
      first: { agent: 'b', content: '41' },
      resourceSetId: servedBy(store, { a: again, b: again, c: null }),
    });
    teamRollout(store, { taskId: 'mul', first: { agent: 'b', content: '40' } });
    const startWeights = { resourceId: base, dir: '/w/base' };
    const built = await buildDataset(store, { algo: 'grpo', dataDir: dir, startWeights });
    const rows = readRows<GrpoRow>(built.dir);
    expect(rows.map((g) => g.completions.map((c) => [c.content, c.meta.rollout_id]))).toEqual([
      [
        ['ANSWER: 42', r1.id],
        ['ANSWER: 41', r3.id], // served by the same folder under another resource
      ],
    ]);
    // Rollout 2: the answer and 3 votes by other weights; c of rollout 3 (served elsewhere) and all of
    // rollout 4 (no resource set) are not on record.
    expect(built.stats.dropped).toMatchObject({ off_policy: 4, unknown_weights: 5 });
    const everyone = await buildDataset(store, { algo: 'grpo', dataDir: dir });
    expect(readRows<GrpoRow>(everyone.dir)[0]!.completions).toHaveLength(4);
    store.close();
  });
});
