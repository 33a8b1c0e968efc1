import { describe, expect, it } from 'vitest';
import { agreementKey, agreementReward } from '../../src/rewards/agreement.js';
import { ctxFor, mathOutcome, openTask, rewardsConfig } from '../fixtures/rewards/outcomes.js';

describe('agreement (the majority as a pseudo-label)', () => {
  it('compares answer lines: markers, case, a trailing period and the form of a number do not matter', () => {
    expect(agreementKey('6*7 = 42\nFinal answer: 42')).toBe('42');
    expect(agreementKey('ANSWER: 42.0')).toBe('42');
    expect(agreementKey('The answer is 1,200.')).toBe('1200');
    expect(agreementKey('Final answer: Paris.')).toBe('paris');
  });

  it("compares a free-form reply by its answer line's last number with compare: last_number", () => {
    expect(agreementKey('So, 2 * 5 = 10.')).toBe('so, 2 * 5 = 10');
    expect(agreementKey('So, 2 * 5 = 10.', 'last_number')).toBe('10');
    expect(agreementKey('A multiplicative identity: 5 x 2 = 10.0', 'last_number')).toBe('10');
    expect(agreementKey('Final answer: Paris.', 'last_number')).toBe('paris');
  });

  it('rewards each answer that agrees with the majority, and the final answer, without reading the reference', async () => {
    // answers 41 (as a sentence), 42, 40, 42: "42" holds 2 of 4, the default minimum share
    const rewards = await agreementReward.score(ctxFor(mathOutcome({ task: openTask })));
    expect(rewards.filter((r) => r.channel === 'turn').map((r) => [r.agent, r.targetSeq, r.value])).toEqual([
      ['a', 3, 0],
      ['b', 5, 1],
      ['c', 7, 0],
      ['a', 9, 1],
    ]);
    expect(rewards.find((r) => r.channel === 'rollout')).toMatchObject({ value: 1 });
    expect(rewards[1]!.reason).toBe('agrees with the majority (2 of 4 answers and samples say "42")');
  });

  it("counts the extra samples of each decision: they form the majority where the team's answers differ", async () => {
    const answers = mathOutcome().answers.slice(0, 3); // 41 (a sentence), 42, 40
    const samples = [
      { agent: 'a', content: 'ANSWER: 40', seq: 20 },
      { agent: 'c', content: 'It is 40.\nFinal answer: 40', seq: 21 },
      { agent: 'b', content: 'ANSWER: 40.0', seq: 22 },
    ];
    const rewards = await agreementReward.score(ctxFor(mathOutcome({ answers, samples, finalAnswer: 'ANSWER: 42' })));
    expect(rewards.filter((r) => r.channel === 'turn').map((r) => [r.targetSeq, r.value])).toEqual([
      [3, 0],
      [5, 0],
      [7, 1],
      [20, 1],
      [21, 1],
      [22, 1],
    ]);
    expect(rewards.find((r) => r.channel === 'rollout')).toMatchObject({ value: 0 });
  });

  it("counts other rollouts' answers to the same prompt (peers) toward the majority and scores only its own", async () => {
    const answers = mathOutcome().answers.slice(1, 2); // one answer: 42
    const alone = await agreementReward.score(ctxFor(mathOutcome({ answers, finalAnswer: 'ANSWER: 42' })));
    expect(alone).toEqual([]);
    const peers = ['ANSWER: 40', '40', 'It is 40.\nFinal answer: 40.'];
    const rewards = await agreementReward.score(ctxFor(mathOutcome({ answers, peers, finalAnswer: 'ANSWER: 42' })));
    expect(rewards.map((r) => [r.channel, r.targetSeq ?? null, r.value])).toEqual([
      ['turn', 5, 0],
      ['rollout', null, 0],
    ]);
    expect(rewards[1]!.reason).toBe('the final answer disagrees (3 of 4 answers and samples say "40")');
  });

  it('gives no signal below the minimum share, below the minimum answers, or on a tie', async () => {
    const strict = rewardsConfig({ agreement: { min_share: 0.6, min_answers: 3 } });
    expect(await agreementReward.score(ctxFor(mathOutcome(), strict))).toEqual([]);
    const few = rewardsConfig({ agreement: { min_share: 0.5, min_answers: 5 } });
    expect(await agreementReward.score(ctxFor(mathOutcome(), few))).toEqual([]);
    const answers = mathOutcome()
      .answers.slice(0, 2)
      .map((a, i) => ({ ...a, content: `ANSWER: ${40 + i}` }));
    const tie = rewardsConfig({ agreement: { min_share: 0.5, min_answers: 2 } });
    expect(await agreementReward.score(ctxFor(mathOutcome({ answers }), tie))).toEqual([]);
  });

  it("agreement counts an answer another agent repeated (a repeating vote) as that answer, on the vote's span", async () => {
    // independent answers 41, 42 and 40; b's and c's later 42s repeated a's and were recorded as votes for it
    const outcome = mathOutcome({
      answers: mathOutcome().answers.slice(0, 3),
      votes: [
        { voter: 'a', target: 'c', reason: 'same final answer: 40', round: 1, seq: 10, repeats: true },
        { voter: 'b', target: 'c', reason: 'b likes c', round: 1, seq: 11 },
      ],
      finalAnswer: 'The answer is 40',
    });
    const rewards = await agreementReward.score(ctxFor(outcome));
    expect(rewards.filter((r) => r.channel === 'turn').map((r) => [r.targetSeq, r.value])).toEqual([
      [3, 0],
      [5, 0],
      [7, 1],
      [10, 1],
    ]);
    expect(rewards.find((r) => r.channel === 'rollout')).toMatchObject({ value: 1 });
  });
});
