import { describe, expect, it } from 'vitest';
import { coordinationReward } from '../../src/rewards/coordination.js';
import { humanReward } from '../../src/rewards/human.js';
import { agentOf } from '../../src/rewards/outcome.js';
import { peerVoteReward } from '../../src/rewards/peer-vote.js';
import { toolReward } from '../../src/rewards/tool.js';
import type { RolloutOutcome } from '../../src/rewards/types.js';
import { referenceBest, votingReward } from '../../src/rewards/voting.js';
import { ctxFor, failedOutcome, mathOutcome, openTask, rewardsConfig, textTask } from '../fixtures/rewards/outcomes.js';

const only = async (outcome: RolloutOutcome, config = rewardsConfig()) => {
  const rewards = await coordinationReward.score(ctxFor(outcome, config));
  expect(rewards).toHaveLength(1);
  expect(rewards[0]).toMatchObject({ channel: 'rollout', family: 'coordination' });
  return rewards[0]!;
};

describe('coordination', () => {
  it('adds quality, tokens and consensus with the default coefficients, and shows the breakdown', async () => {
    const r = await only(mathOutcome());
    expect(r.value).toBeCloseTo(0 + 2 * 1 - 0.001 * 1500 + 1);
    expect(r.reason).toBe(
      'rounds 2 (0 over 3 free) × -0.1 = +0; quality 1 (exact) × 2 = +2; tokens 1500 × -0.001 = -1.5; consensus = +1 → 1.5',
    );
  });

  it('penalises rounds beyond free_rounds and a missing consensus; every coefficient comes from config', async () => {
    const slow = mathOutcome({ rounds: 6, consensus: false, tokens: 0, finalAnswer: 'Final answer: 41' });
    expect((await only(slow)).value).toBeCloseTo(-0.1 * 3 + 0 - 0.5);
    const config = rewardsConfig({
      coordination: {
        free_rounds: 1,
        round_penalty: -1,
        quality_coef: 10,
        token_coef: 0,
        consensus_bonus: 5,
        no_consensus_penalty: -7,
      },
    });
    expect((await only(mathOutcome(), config)).value).toBeCloseTo(-1 + 10 + 0 + 5);
    expect((await only(slow, config)).value).toBeCloseTo(-5 + 0 - 7);
  });

  it('counts quality 0 without a reference or a final answer, and F1 for text answers', async () => {
    const open = await only(mathOutcome({ task: openTask, tokens: 0 }));
    expect(open.value).toBeCloseTo(1);
    expect(open.reason).toContain('quality 0 (no reference)');
    const failed = await only(failedOutcome());
    expect(failed.value).toBeCloseTo(-0.2 - 0.5);
    expect(failed.reason).toContain('quality 0 (no final answer)');
    const text = await only(mathOutcome({ task: textTask, tokens: 0, finalAnswer: 'Paris, France' }));
    expect(text.value).toBeCloseTo(2 * (2 / 3) + 1);
    expect(text.reason).toContain('(f1)');
  });
});

describe('voting', () => {
  const votes = (rewards: Awaited<ReturnType<typeof votingReward.score>>, channel: string) =>
    rewards.filter((r) => r.channel === channel).map((r) => [r.agent, r.targetSeq ?? null, r.value]);

  it('rewards votes for the winner or the reference-best answer, per vote and per voter', async () => {
    const outcome = mathOutcome({
      votes: [
        { voter: 'a', target: 'agent2', reason: '', round: 2, seq: 12 },
        { voter: 'b', target: 'a', reason: '', round: 2, seq: 13 },
        { voter: 'c', target: 'c', reason: '', round: 2, seq: 14 },
        { voter: 'c', target: 'agent3', reason: '', round: 2, seq: 15 },
      ],
    });
    const rewards = await votingReward.score(ctxFor(outcome));
    expect(votes(rewards, 'turn')).toEqual([
      ['a', 12, 1],
      ['b', 13, 1],
      ['c', 14, -0.5],
      ['c', 15, -0.5],
    ]);
    expect(votes(rewards, 'agent')).toEqual([
      ['a', null, 1],
      ['b', null, 1],
      ['c', null, -0.5],
    ]);
    expect(rewards[1]!.reason).toContain('best answer by the reference');
    expect(rewards[2]!.reason).toContain('neither');
  });

  it('judges the answers standing at the time of the vote, and uses the configured values', async () => {
    const config = rewardsConfig({ voting: { correct: 2, incorrect: -3 } });
    // a's 42 (seq 9) came after this vote (seq 8): a then stood on 41.
    const early = mathOutcome({ winner: 'c', votes: [{ voter: 'b', target: 'a', reason: '', round: 1, seq: 8 }] });
    expect(votes(await votingReward.score(ctxFor(early, config)), 'turn')).toEqual([['b', 8, -3]]);
    expect([...referenceBest(early, config, 8)]).toEqual(['b']);
    expect([...referenceBest(early, config)]).toEqual(['a', 'b']);
  });

  it('without a reference only the winner counts; no votes → nothing', async () => {
    const outcome = mathOutcome({ task: openTask });
    expect(votes(await votingReward.score(ctxFor(outcome)), 'turn')).toEqual([
      ['a', 12, 1],
      ['b', 13, 1],
      ['c', 14, -0.5],
    ]);
    expect(await votingReward.score(ctxFor(mathOutcome({ votes: [] })))).toEqual([]);
    expect(await votingReward.score(ctxFor(failedOutcome()))).toEqual([]);
    expect(
      referenceBest(
        mathOutcome({ answers: [{ agent: 'a', label: 'agent1', content: '7', round: 1, seq: 1 }] }),
        rewardsConfig(),
      ).size,
    ).toBe(0);
  });
});

describe('tool', () => {
  it("scores each call on the turn channel and each agent's mean", async () => {
    const outcome = mathOutcome({
      toolCalls: [...mathOutcome().toolCalls, { agent: 'a', name: 'search', success: false, seq: 8 }],
    });
    const rewards = await toolReward.score(ctxFor(outcome));
    expect(rewards.map((r) => [r.channel, r.agent, r.targetSeq ?? null, r.value])).toEqual([
      ['turn', 'a', 2, 1],
      ['turn', 'c', 6, -1],
      ['turn', 'a', 8, -1],
      ['agent', 'a', null, 0],
      ['agent', 'c', null, -1],
    ]);
    const custom = await toolReward.score(
      ctxFor(mathOutcome(), rewardsConfig({ tool: { success: 0.5, failure: -2 } })),
    );
    expect(custom.filter((r) => r.channel === 'turn').map((r) => r.value)).toEqual([0.5, -2]);
    expect(await toolReward.score(ctxFor(failedOutcome()))).toEqual([]);
  });
});

describe('peer_vote', () => {
  it('gives each final-round answer its share of the final votes', async () => {
    const rewards = await peerVoteReward.score(ctxFor(mathOutcome()));
    expect(rewards.filter((r) => r.channel === 'turn').map((r) => [r.agent, r.targetSeq, r.value])).toEqual([
      ['a', 9, 1 / 3],
      ['b', 5, 2 / 3],
      ['c', 7, 0],
    ]);
    expect(rewards.filter((r) => r.channel === 'agent').map((r) => [r.agent, r.value])).toEqual([
      ['a', 1 / 3],
      ['b', 2 / 3],
      ['c', 0],
    ]);
    expect(rewards[0]!.reason).toBe('1 of 3 final vote(s) for agent1');
  });

  it('gives nothing without votes or answers', async () => {
    expect(await peerVoteReward.score(ctxFor(mathOutcome({ votes: [] })))).toEqual([]);
    expect(await peerVoteReward.score(ctxFor(failedOutcome()))).toEqual([]);
  });
});

describe('human and vote targets', () => {
  it('human is known and computes nothing', async () => {
    expect(humanReward.name).toBe('human');
    expect(humanReward.describe).toMatch(/feedback/);
    expect(await humanReward.score(ctxFor(mathOutcome()))).toEqual([]);
  });

  it('resolves a vote target given as an agent id or a label, whichever way labels map', () => {
    const agentToLabel = mathOutcome();
    expect(agentOf(agentToLabel, 'b')).toBe('b');
    expect(agentOf(agentToLabel, 'agent2')).toBe('b');
    const labelToAgent = mathOutcome({ labels: { agent1: 'a', agent2: 'b', agent3: 'c' } });
    expect(agentOf(labelToAgent, 'agent3')).toBe('c');
    expect(agentOf(mathOutcome({ labels: {} }), 'agent1')).toBe('a');
    expect(agentOf(mathOutcome(), 'nobody')).toBe('nobody');
  });
});
