import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { computeRewards, RewardError } from '../../src/rewards/compute.js';
import { customReward, CustomRewardError, parseCustomOutput } from '../../src/rewards/custom.js';
import { ctxFor, failedOutcome, mathOutcome, rewardsConfig } from '../fixtures/rewards/outcomes.js';
import { FIXTURES } from '../helpers.js';

const script = (name: string, timeout_ms = 10_000) =>
  rewardsConfig({ custom: { command: [process.execPath, path.join(FIXTURES, 'rewards', name)], timeout_ms } });

describe('custom reward command', () => {
  it('reads the outcome on stdin and scores the rollout with the number it prints', async () => {
    expect(await customReward.score(ctxFor(mathOutcome(), script('ok.mjs')))).toEqual([
      { channel: 'rollout', family: 'custom', value: 1, reason: expect.stringMatching(/ok\.mjs` printed 1$/) },
    ]);
    expect((await customReward.score(ctxFor(failedOutcome(), script('ok.mjs'))))[0]!.value).toBe(0);
  });

  it('accepts JSON {"value", "reason"}', async () => {
    expect(await customReward.score(ctxFor(mathOutcome(), script('json.mjs')))).toEqual([
      { channel: 'rollout', family: 'custom', value: 0.4, reason: '4 answers in r-math' },
    ]);
  });

  it('throws an error naming the command for output that is not a number', async () => {
    const err = await Promise.resolve(customReward.score(ctxFor(mathOutcome(), script('not-a-number.mjs')))).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CustomRewardError);
    expect((err as Error).message).toMatch(
      /custom reward command `.*not-a-number\.mjs` printed "great job!", not a number/,
    );
    expect((err as CustomRewardError).command.at(-1)).toMatch(/not-a-number\.mjs$/);
  });

  it('throws on a timeout and on a crash, naming the command', async () => {
    const started = Date.now();
    await expect(customReward.score(ctxFor(mathOutcome(), script('slow.mjs', 300)))).rejects.toThrow(
      /`.*slow\.mjs` timed out after 300 ms/,
    );
    expect(Date.now() - started).toBeLessThan(5000);
    await expect(customReward.score(ctxFor(mathOutcome(), script('crash.mjs')))).rejects.toThrow(
      /`.*crash\.mjs` exited with code 3: reward script exploded/,
    );
    const missing = rewardsConfig({ custom: { command: ['/nonexistent/reward-cmd'] } });
    await expect(customReward.score(ctxFor(mathOutcome(), missing))).rejects.toThrow(
      /`\/nonexistent\/reward-cmd` failed/,
    );
    await expect(customReward.score(ctxFor(mathOutcome(), rewardsConfig()))).rejects.toThrow(/rewards.custom.command/);
  });

  it('is rethrown by computeRewards as a RewardError naming the family', async () => {
    const err = await computeRewards(ctxFor(mathOutcome(), script('crash.mjs')), { exact: 1, custom: 1 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RewardError);
    expect(err).toMatchObject({
      family: 'custom',
      message: expect.stringMatching(/^reward custom: custom reward command/),
    });
    expect((err as Error).cause).toBeInstanceOf(CustomRewardError);
    const ok = await computeRewards(ctxFor(mathOutcome(), script('json.mjs')), { custom: 2 });
    expect(ok.total).toBeCloseTo(0.8);
  });

  it('parses stdout', () => {
    expect(parseCustomOutput(' -1.5e-1 \n')).toEqual({ value: -0.15, reason: null });
    expect(parseCustomOutput('{"value": 2}')).toEqual({ value: 2, reason: null });
    expect(parseCustomOutput('{"value": "2"}')).toBeNull();
    expect(parseCustomOutput('NaN')).toBeNull();
    expect(parseCustomOutput('')).toBeNull();
    expect(parseCustomOutput('null')).toBeNull();
  });
});
