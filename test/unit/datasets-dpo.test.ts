import { describe, expect, it } from 'vitest';
import { buildDataset, DEFAULT_SYSTEM_PROMPT, type DpoRow } from '../../src/datasets/index.js';
import { storeDb } from '../../src/store/store.js';
import { fixtureStore, readRows, teamRollout } from '../fixtures/datasets/team-rollouts.js';

const inRollout = (rows: DpoRow[]) => rows.filter((r) => r.meta.kind === 'in_rollout');
const cross = (rows: DpoRow[]) => rows.filter((r) => r.meta.kind === 'cross_rollout');

describe('DPO dataset', () => {
  it('pairs the winning answer against the losing ones, with the task as a system + user prompt', async () => {
    const { store, dir } = fixtureStore();
    const solver = store.resources.add({ kind: 'prompt', name: 'solver', content: 'You are a careful solver.' });
    const r = teamRollout(store, {
      taskId: 'mul',
      first: { agent: 'a', content: '42' },
      second: { agent: 'c', content: '41' },
      prompts: { a: solver.id, b: solver.id, c: solver.id },
    });
    const built = await buildDataset(store, { algo: 'dpo', dataDir: dir });
    const rows = readRows<DpoRow>(built.dir);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toEqual({
      prompt: [
        { role: 'system', content: 'You are a careful solver.' },
        { role: 'user', content: 'What is 6 x 7?' },
      ],
      chosen: [{ role: 'assistant', content: '42' }],
      rejected: [{ role: 'assistant', content: '41' }],
      margin: 1,
      meta: expect.objectContaining({
        kind: 'in_rollout',
        rollout_id: r.id,
        task_id: 'mul',
        agent: 'a',
        seq: r.seqs.answer_a_1,
        rejected_agent: 'c',
        rejected_seq: r.seqs.answer_c_2,
        chosen_reward: 1,
        rejected_reward: 0,
      }),
    });
    expect(built.stats.counts).toEqual({ in_rollout_pairs: 1 });
    store.close();
  });

  it('applies the minimum margin: ties pass at 0, a winner the rewards rank lower never does', async () => {
    const { store, dir } = fixtureStore();
    teamRollout(store, {
      taskId: 'mul',
      first: { agent: 'a', content: '42' },
      second: { agent: 'b', content: 'forty-two' },
      answerRewards: { 'forty-two': 1 },
    });
    teamRollout(store, {
      taskId: 'cap',
      first: { agent: 'a', content: 'Lyon' },
      second: { agent: 'b', content: 'Paris' },
    });
    const tie = await buildDataset(store, { algo: 'dpo', dataDir: dir });
    expect(
      inRollout(readRows<DpoRow>(tie.dir)).map((p) => [p.chosen[0].content, p.rejected[0].content, p.margin]),
    ).toEqual([['42', 'forty-two', 0]]);
    expect(tie.stats.dropped).toMatchObject({ below_margin: 1 });
    const strict = await buildDataset(store, { algo: 'dpo', dataDir: dir, options: { dpo: { min_margin: 0.1 } } });
    expect(inRollout(readRows<DpoRow>(strict.dir))).toEqual([]);
    expect(strict.stats.dropped).toMatchObject({ below_margin: 2 });
    store.close();
  });

  it('pairs higher- against lower-reward final answers across rollouts of a task, deduplicated', async () => {
    const { store, dir } = fixtureStore();
    teamRollout(store, { taskId: 'mul', first: { agent: 'a', content: '42' }, total: 1.5 });
    teamRollout(store, {
      taskId: 'mul',
      first: { agent: 'b', content: '41' },
      votes: { a: 'b', b: 'b', c: 'b' },
      total: 0,
    });
    teamRollout(store, {
      taskId: 'mul',
      first: { agent: 'c', content: '42' },
      votes: { a: 'c', b: 'c', c: 'c' },
      total: 0.5,
    });
    teamRollout(store, { taskId: 'mul', first: { agent: 'a', content: '40' }, total: 0.2 });
    teamRollout(store, { taskId: 'cap', first: { agent: 'a', content: 'Paris' }, total: 1 });
    const built = await buildDataset(store, { algo: 'dpo', dataDir: dir, options: { dpo: { min_margin: 0.5 } } });
    const pairs = cross(readRows<DpoRow>(built.dir));
    // "Final answer: 42" ended two rollouts: its reward is their mean, 1.
    expect(pairs.map((p) => [p.chosen[0].content, p.rejected[0].content, p.margin])).toEqual([
      ['Final answer: 42', 'Final answer: 41', 1],
      ['Final answer: 42', 'Final answer: 40', 0.8],
    ]);
    expect(pairs[0]!.prompt).toEqual([
      { role: 'system', content: DEFAULT_SYSTEM_PROMPT },
      { role: 'user', content: 'What is 6 x 7?' },
    ]);
    expect(pairs[0]!.meta).toMatchObject({
      task_id: 'mul',
      category: 'arithmetic',
      chosen_rollouts: 2,
      chosen_reward: 1,
      rejected_reward: 0,
    });
    const capped = await buildDataset(store, {
      algo: 'dpo',
      dataDir: dir,
      options: { dpo: { max_pairs_per_task: 1 } },
    });
    expect(cross(readRows<DpoRow>(capped.dir)).map((p) => p.margin)).toEqual([1]);
    expect(capped.stats.dropped.over_pair_limit).toBe(2);
    store.close();
  });

  it('correctness pairs: verified-right answers of a task against verified-wrong ones, from any agent and rollout, even when the wrong one won', async () => {
    const { store, dir } = fixtureStore();
    // The team voted for b's wrong 41 over a's right 42: the winner's order would prefer 41.
    teamRollout(store, {
      taskId: 'mul',
      first: { agent: 'a', content: '42' },
      second: { agent: 'b', content: '41' },
      votes: { a: 'b', b: 'b', c: 'b' },
    });
    teamRollout(store, { taskId: 'mul', first: { agent: 'c', content: '40' } });
    teamRollout(store, { taskId: 'cap', first: { agent: 'a', content: 'Paris' } });
    const winner = readRows<DpoRow>((await buildDataset(store, { algo: 'dpo', dataDir: dir })).dir);
    // The winner's order never prefers a's right 42 inside that rollout (the pair is below the margin).
    expect(winner.some((p) => p.meta.kind === 'in_rollout' && p.chosen[0].content === '42')).toBe(false);
    const built = await buildDataset(store, { algo: 'dpo', dataDir: dir, options: { dpo: { pairs: 'correctness' } } });
    const rows = readRows<DpoRow>(built.dir);
    expect(rows.map((p) => [p.meta.task_id, p.chosen[0].content, p.rejected[0].content, p.margin])).toEqual([
      ['mul', '42', '41', 1],
      ['mul', '42', '40', 1],
    ]);
    expect(rows[0]!.prompt).toEqual([
      { role: 'system', content: DEFAULT_SYSTEM_PROMPT },
      { role: 'user', content: 'What is 6 x 7?' },
    ]);
    expect(rows[0]!.meta).toMatchObject({ kind: 'correctness', agent: 'a', rejected_agent: 'b' });
    expect(built.stats.counts).toEqual({ correctness_pairs: 2 });
    // cap has a right answer only: nothing to pair it with.
    expect(built.stats.dropped).toMatchObject({ no_wrong_answer: 1 });
    const capped = await buildDataset(store, {
      algo: 'dpo',
      dataDir: dir,
      options: { dpo: { pairs: 'correctness', max_pairs_per_task: 1 } },
    });
    expect(readRows<DpoRow>(capped.dir)).toHaveLength(1);
    await expect(
      buildDataset(store, { algo: 'dpo', dataDir: dir, options: { dpo: { pairs: 'nope' as 'winner' } } }),
    ).rejects.toThrow(/train\.dpo\.pairs: must be winner or correctness/);
    store.close();
  });

  it('correctness pairs without references: the verifying family (agreement) labels the answers', async () => {
    const { store, dir } = fixtureStore();
    // agreement's verdicts: the majority said 41, so 41 "agrees" (1) and the right 42 does not (0)
    teamRollout(store, {
      taskId: 'mul',
      first: { agent: 'a', content: '42' },
      second: { agent: 'b', content: '41' },
      answerRewards: { '42': 0, '41': 1 },
      verdictFamily: 'agreement',
    });
    const build = (verifying?: string[]) =>
      buildDataset(store, { algo: 'dpo', dataDir: dir, options: { dpo: { pairs: 'correctness' }, verifying } });
    const labelFree = await build(['agreement']);
    expect(readRows<DpoRow>(labelFree.dir).map((p) => [p.chosen[0].content, p.rejected[0].content])).toEqual([
      ['41', '42'],
    ]);
    // Read as with references, nothing verified these answers: nothing to pair.
    const withReferences = await build();
    expect(withReferences.stats.rows).toBe(0);
    expect(withReferences.stats.dropped).toMatchObject({ not_verified: 2 });
    store.close();
  });

  it('drops duplicate pairs and skips rollouts without a usable winner answer', async () => {
    const { store, dir } = fixtureStore();
    const spec = {
      taskId: 'rev',
      first: { agent: 'a' as const, content: 'cba' },
      second: { agent: 'b' as const, content: 'abc' },
      total: 1,
    };
    teamRollout(store, spec);
    teamRollout(store, spec);
    const built = await buildDataset(store, {
      algo: 'dpo',
      dataDir: dir,
      options: { dpo: { system_prompt: 'Reverse words.' } },
    });
    const rows = readRows<DpoRow>(built.dir);
    expect(rows.map((r) => r.meta.kind)).toEqual(['in_rollout']);
    expect(rows[0]!.prompt[0]).toEqual({ role: 'system', content: 'Reverse words.' });
    expect(built.stats.dropped).toMatchObject({ duplicate_pair: 1 });
    store.close();
  });

  it('reads the task from the first prompt when the rollout has no task row', async () => {
    const { store, dir } = fixtureStore();
    const r = teamRollout(store, {
      taskId: 'mul',
      first: { agent: 'a', content: '42' },
      second: { agent: 'c', content: '41' },
    });
    storeDb(store).prepare('UPDATE rollouts SET task_id = NULL WHERE id = ?').run(r.id);
    const built = await buildDataset(store, { algo: 'dpo', dataDir: dir });
    const rows = readRows<DpoRow>(built.dir);
    expect(rows.map((p) => [p.prompt[1]!.content, p.chosen[0].content, p.meta.task_id, p.meta.category])).toEqual([
      ['What is 6 x 7?', '42', null, 'arithmetic'],
    ]);
    store.close();
  });
});
