import { describe, expect, it } from 'vitest';
import { REWARD_FAMILIES } from '../../src/config/schema.js';
import { UserError } from '../../src/errors.js';
import { SINGLE_ANSWER_FAMILIES } from '../../src/rewards/completion.js';
import { computeRewards, familyValue, RewardError } from '../../src/rewards/compute.js';
import { getRewardFamily, hasRewardFamily, REWARD_REGISTRY, rewardFamilyNames } from '../../src/rewards/registry.js';
import type { RewardUsage } from '../../src/rewards/types.js';
import { ctxFor, failedOutcome, mathOutcome, openTask, rewardsConfig, textTask } from '../fixtures/rewards/outcomes.js';

describe('reward registry', () => {
  it('holds every configurable family, in the schema order, each with one shape', () => {
    expect(rewardFamilyNames()).toEqual([...REWARD_FAMILIES]);
    for (const family of REWARD_REGISTRY) {
      expect(Object.keys(family).sort()).toEqual(['describe', 'name', 'scope', 'score']);
      expect(family.describe.length).toBeGreaterThan(10);
      expect(['answer', 'team', 'feedback']).toContain(family.scope);
      expect(getRewardFamily(family.name)).toBe(family);
    }
    // The single-answer families (online GRPO samples, collect samples) follow from each family's scope.
    expect(SINGLE_ANSWER_FAMILIES).toEqual([
      'exact',
      'numeric',
      'f1',
      'rouge_l',
      'regex',
      'contains',
      'judge',
      'custom',
    ]);
    expect(hasRewardFamily('exact')).toBe(true);
    expect(hasRewardFamily('bleu')).toBe(false);
  });

  it('throws for an unknown name, listing the valid ones', () => {
    expect(() => getRewardFamily('bleu')).toThrow(UserError);
    expect(() => getRewardFamily('bleu')).toThrow(
      `unknown reward family "bleu"; valid families: ${REWARD_FAMILIES.join(', ')}`,
    );
  });
});

describe('computeRewards', () => {
  it('runs the weighted families, tags rewards with their family and totals weight × value', async () => {
    const weights = {
      exact: 1,
      numeric: 0.5,
      coordination: 0.2,
      voting: 0.3,
      tool: 0.1,
      peer_vote: 1,
      human: 1,
      f1: 0,
    };
    const usage: RewardUsage = { judgeTokens: 5, judgeCalls: 1 };
    const result = await computeRewards(ctxFor(mathOutcome(), rewardsConfig(), { usage }), weights);
    expect(Object.keys(result.byFamily)).toEqual(['exact', 'numeric', 'coordination', 'voting', 'tool', 'peer_vote']);
    expect(result.byFamily).toEqual({ exact: 1, numeric: 1, coordination: 1.5, voting: 1, tool: 0, peer_vote: 1 / 3 });
    expect(result.total).toBeCloseTo(1 + 0.5 + 0.2 * 1.5 + 0.3 * 1 + 0.1 * 0 + 1 / 3 + 0);
    expect(result.judgeTokens).toBe(0);
    expect(new Set(result.rewards.map((r) => r.family))).toEqual(
      new Set(['exact', 'numeric', 'coordination', 'voting', 'tool', 'peer_vote']),
    );
    expect(result.rewards.filter((r) => r.channel === 'rollout').map((r) => r.family)).toEqual([
      'exact',
      'numeric',
      'coordination',
    ]);
    for (const r of result.rewards.filter((x) => x.channel === 'turn'))
      expect([r.agent, r.targetSeq]).not.toContain(undefined);
  });

  it('leaves families that did not score out of byFamily (0 in the total), and handles a failed rollout', async () => {
    const open = await computeRewards(ctxFor(mathOutcome({ task: openTask, toolCalls: [] }), rewardsConfig()), {
      exact: 1,
      tool: 1,
    });
    expect(open).toEqual({ rewards: [], total: 0, byFamily: {}, judgeTokens: 0 });
    const failed = await computeRewards(ctxFor(failedOutcome(), rewardsConfig()), {
      exact: 1,
      numeric: 1,
      coordination: 0.2,
      voting: 1,
      peer_vote: 1,
    });
    expect(failed.byFamily).toEqual({ exact: 0, numeric: 0, coordination: expect.closeTo(-0.7) });
    expect(failed.total).toBeCloseTo(-0.14);
    const text = await computeRewards(ctxFor(mathOutcome({ task: textTask, finalAnswer: 'Paris' }), rewardsConfig()), {
      exact: 1,
      numeric: 1,
      f1: 2,
    });
    expect(text.byFamily).toEqual({ exact: 1, f1: 1 });
    expect(text.total).toBe(3);
  });

  it('uses the embedded default weights', async () => {
    const config = rewardsConfig();
    const result = await computeRewards(ctxFor(mathOutcome(), config), config.weights);
    expect(result.total).toBeCloseTo(1 + 1 + 0.2 * 1.5);
  });

  it('rejects unknown weight names and names the family that failed', async () => {
    await expect(computeRewards(ctxFor(mathOutcome(), rewardsConfig()), { bleu: 1 })).rejects.toThrow(
      /unknown reward family "bleu"; valid families: exact, numeric/,
    );
    const bad = mathOutcome({ task: { ...textTask, reference: '/([/' } });
    await expect(computeRewards(ctxFor(bad, rewardsConfig()), { regex: 1 })).rejects.toThrow(RewardError);
    await expect(computeRewards(ctxFor(bad, rewardsConfig()), { regex: 1 })).rejects.toThrow(
      /^reward regex: task file:capitals:3: invalid answer regex/,
    );
    const nan = rewardsConfig({ tool: { success: 1, failure: -1 } });
    nan.tool.success = Number.NaN;
    await expect(computeRewards(ctxFor(mathOutcome(), nan), { tool: 1 })).rejects.toThrow(
      /reward tool: turn value is not a finite number/,
    );
  });

  it('familyValue prefers the rollout channel, else the mean of turns, else null', () => {
    expect(
      familyValue([
        { channel: 'turn', family: 'x', value: 1 },
        { channel: 'rollout', family: 'x', value: 0.25 },
      ]),
    ).toBe(0.25);
    expect(
      familyValue([
        { channel: 'turn', family: 'x', value: 1 },
        { channel: 'turn', family: 'x', value: 0 },
        { channel: 'agent', family: 'x', value: 9 },
      ]),
    ).toBe(0.5);
    expect(familyValue([{ channel: 'agent', family: 'x', value: 9 }])).toBeNull();
    expect(familyValue([])).toBeNull();
  });
});
