import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildDataset, type SftRow } from '../../src/datasets/index.js';
import { UserError } from '../../src/errors.js';
import { fixtureStore, readRows, SYSTEM_PROMPT, teamRollout } from '../fixtures/datasets/team-rollouts.js';

describe('SFT dataset', () => {
  it('keeps accepted answers and the presentation above the reward threshold, as chat examples', async () => {
    const { store, dir } = fixtureStore();
    const r = teamRollout(store, {
      taskId: 'mul',
      first: { agent: 'a', content: '42' },
      second: { agent: 'c', content: '41' },
    });
    const built = await buildDataset(store, { algo: 'sft', dataDir: dir });
    const rows = readRows<SftRow>(built.dir);
    expect(rows).toHaveLength(2);
    const [answer, presentation] = rows;
    expect(answer!.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
    expect(answer!.messages[0]!.content).toContain(SYSTEM_PROMPT);
    expect(answer!.messages[1]!.content).toContain('What is 6 x 7?');
    expect(answer!.messages[2]).toEqual({ role: 'assistant', content: 'ANSWER: 42' });
    expect(answer!).toMatchObject({
      reward: 1,
      meta: {
        rollout_id: r.id,
        task_id: 'mul',
        agent: 'a',
        seq: r.seqs.prompt_a_1,
        kind: 'answer',
        action_seq: r.seqs.answer_a_1,
        model: 'stub-model',
        category: 'arithmetic',
      },
    });
    expect(presentation!.messages[2]).toEqual({ role: 'assistant', content: 'Final answer: 42' });
    expect(presentation!.messages[0]!.content).toContain('was selected');
    expect(presentation!).toMatchObject({
      reward: r.total,
      meta: { kind: 'presentation', agent: 'a', seq: r.seqs.presentation_prompt },
    });
    expect(built.stats).toMatchObject({
      rows: 2,
      clean_rows: 2,
      dropped: { below_threshold: 1 },
      counts: { answers: 1, presentations: 1 },
    });
    store.close();
  });

  it('falls back to the rollout total without a weighted turn reward; a null threshold keeps everything', async () => {
    const { store, dir } = fixtureStore();
    const r = teamRollout(store, {
      taskId: 'mul',
      first: { agent: 'a', content: '42' },
      second: { agent: 'c', content: '41' },
      total: 0.7,
    });
    const all = readRows<SftRow>(
      (await buildDataset(store, { algo: 'sft', dataDir: dir, options: { sft: { reward_threshold: null } } })).dir,
    );
    expect(all.map((x) => [x.meta.agent, x.reward])).toEqual([
      ['a', 1],
      ['c', 0],
      ['a', 0.7],
    ]);
    const noExact = await buildDataset(store, {
      algo: 'sft',
      dataDir: dir,
      options: { weights: { voting: 1 }, sft: { reward_threshold: 0.5 } },
    });
    expect(readRows<SftRow>(noExact.dir).map((x) => x.reward)).toEqual([r.total, r.total, r.total]);
    const high = await buildDataset(store, { algo: 'sft', dataDir: dir, options: { sft: { reward_threshold: 0.8 } } });
    expect(readRows<SftRow>(high.dir).map((x) => x.meta.kind)).toEqual(['answer']);
    store.close();
  });

  it('filters agents by id list or regular expression', async () => {
    const { store, dir } = fixtureStore();
    teamRollout(store, { taskId: 'mul', first: { agent: 'a', content: '42' }, second: { agent: 'c', content: '41' } });
    const byList = await buildDataset(store, {
      algo: 'sft',
      dataDir: dir,
      options: { sft: { agents: ['c'], reward_threshold: null } },
    });
    expect(readRows<SftRow>(byList.dir).map((x) => x.meta.agent)).toEqual(['c']);
    expect(byList.stats.dropped.agent_filter).toBe(2);
    const byRegex = await buildDataset(store, {
      algo: 'sft',
      dataDir: dir,
      options: { sft: { agents: '^(a|b)$', reward_threshold: null } },
    });
    expect(readRows<SftRow>(byRegex.dir).map((x) => `${x.meta.agent}:${x.meta.kind}`)).toEqual([
      'a:answer',
      'a:presentation',
    ]);
    await expect(buildDataset(store, { algo: 'sft', dataDir: dir, options: { sft: { agents: '(' } } })).rejects.toThrow(
      UserError,
    );
    await expect(buildDataset(store, { algo: 'sft', dataDir: dir, options: { sft: { agents: '(' } } })).rejects.toThrow(
      /train\.sft\.agents: is not a valid regular expression/,
    );
    store.close();
  });

  it('uses completed rollouts only, and writes an empty dataset when there is nothing', async () => {
    const { store, dir } = fixtureStore();
    const empty = await buildDataset(store, { algo: 'sft', dataDir: dir });
    expect(empty.stats).toMatchObject({ rows: 0, rollouts_scanned: 0, clean_share: 0 });
    expect(empty.manifest).toMatchObject({ rows: 0, watermark: { from: 0, to: 0 } });
    expect(fs.readFileSync(path.join(empty.dir, 'data.jsonl'), 'utf8')).toBe('');
    teamRollout(store, { taskId: 'mul', first: { agent: 'a', content: '42' }, status: 'failed' });
    teamRollout(store, { taskId: 'cap', first: { agent: 'b', content: 'Paris' }, status: 'cancelled' });
    const none = await buildDataset(store, { algo: 'sft', dataDir: dir });
    expect(none.stats).toMatchObject({
      rows: 0,
      rollouts_scanned: 2,
      rollouts_by_status: { failed: 1, cancelled: 1 },
      spans: 0,
    });
    expect(none.watermark).toBe(2);
    store.close();
  });
  it('select verified (rejection sampling): only completions an exact reward verified right, answers and samples, once each, capped per task', async () => {
    const { store, dir } = fixtureStore();
    const r = teamRollout(store, {
      taskId: 'mul',
      first: { agent: 'a', content: '42' },
      second: { agent: 'c', content: '41' },
      samples: [
        { content: '42', reward: 1 },
        { content: '40', reward: 0 },
        { content: '6 x 7 = 42', reward: 1 },
        { content: 'unscored', reward: null },
      ],
    });
    teamRollout(store, { taskId: 'cap', first: { agent: 'b', content: 'Lyon' }, total: 1 });
    const built = await buildDataset(store, { algo: 'sft', dataDir: dir, options: { sft: { select: 'verified' } } });
    const rows = readRows<SftRow>(built.dir);
    // a's right answer, and the sample that says it differently; the sample equal to the answer is a repeat.
    expect(rows.map((x) => [x.meta.kind, x.messages.at(-1)!.content, x.reward])).toEqual([
      ['answer', 'ANSWER: 42', 1],
      ['sample', 'ANSWER: 6 x 7 = 42', 1],
    ]);
    expect(rows[0]!.messages[1]!.content).toContain('What is 6 x 7?');
    expect(rows[0]!.meta).toMatchObject({
      task_id: 'mul',
      agent: 'a',
      seq: r.seqs.prompt_a_1,
      action_seq: r.seqs.answer_a_1,
    });
    // c's 41, the sample 40 and b's Lyon were verified wrong (the team's total of 1 for Lyon does not count); votes and presentations are never rows.
    expect(built.stats.dropped).toMatchObject({ verified_wrong: 3, duplicate_completion: 1, not_verified: 1 });
    expect(built.stats.counts).toEqual({ verified_answers: 1, verified_samples: 1 });
    const capped = await buildDataset(store, {
      algo: 'sft',
      dataDir: dir,
      options: { sft: { select: 'verified', max_per_task: 1 } },
    });
    expect(readRows<SftRow>(capped.dir).map((x) => x.meta.kind)).toEqual(['answer']);
    expect(capped.stats.dropped.over_task_limit).toBe(1);
    await expect(
      buildDataset(store, { algo: 'sft', dataDir: dir, options: { sft: { select: 'best' as 'reward' } } }),
    ).rejects.toThrow(/train\.sft\.select: must be reward or verified/);
    store.close();
  });
});
