import { describe, expect, it } from 'vitest';
import { containsReward } from '../../src/rewards/contains.js';
import { exactReward } from '../../src/rewards/exact.js';
import { f1Reward, tokenF1 } from '../../src/rewards/f1.js';
import { numericReward } from '../../src/rewards/numeric.js';
import { answerQuality } from '../../src/rewards/quality.js';
import { regexReward } from '../../src/rewards/regex.js';
import { lcsLength, rougeL, rougeLReward } from '../../src/rewards/rouge-l.js';
import type { RewardFamily, RolloutOutcome } from '../../src/rewards/types.js';
import type { Task } from '../../src/tasks/types.js';
import {
  ctxFor,
  failedOutcome,
  mathOutcome,
  mathTask,
  openTask,
  rewardsConfig,
  textTask,
} from '../fixtures/rewards/outcomes.js';

const ALL = [exactReward, numericReward, f1Reward, rougeLReward, regexReward, containsReward];
const score = async (family: RewardFamily, outcome: RolloutOutcome, config = rewardsConfig()) =>
  family.score(ctxFor(outcome, config));
const rolloutValue = async (
  family: RewardFamily,
  finalAnswer: string | null,
  task: Task = mathTask,
  config = rewardsConfig(),
) => (await score(family, mathOutcome({ task, finalAnswer }), config)).find((r) => r.channel === 'rollout')?.value;
const withRef = (reference: string, metadata: Record<string, unknown> = {}): Task => ({
  ...textTask,
  reference,
  metadata,
});

describe('answer-quality families: channels', () => {
  it("score the final answer, every answer (turn) and each agent's last answer (agent)", async () => {
    const rewards = await score(exactReward, mathOutcome());
    expect(rewards.filter((r) => r.channel === 'rollout')).toEqual([
      expect.objectContaining({ family: 'exact', value: 1 }),
    ]);
    expect(rewards.filter((r) => r.channel === 'turn').map((r) => [r.agent, r.targetSeq, r.value])).toEqual([
      ['a', 3, 0],
      ['b', 5, 1],
      ['c', 7, 0],
      ['a', 9, 1],
    ]);
    expect(rewards.filter((r) => r.channel === 'agent').map((r) => [r.agent, r.value, r.targetSeq ?? null])).toEqual([
      ['a', 1, null],
      ['b', 1, null],
      ['c', 0, null],
    ]);
  });

  it('return nothing without a reference, and nothing for a missing task', async () => {
    for (const family of ALL) {
      expect(await score(family, mathOutcome({ task: openTask }))).toEqual([]);
      expect(await score(family, mathOutcome({ task: null }))).toEqual([]);
      expect(await score(family, mathOutcome({ task: { ...mathTask, reference: '  ' } }))).toEqual([]);
    }
  });

  it('give a failed rollout 0 on the rollout channel and nothing else when nobody answered', async () => {
    for (const family of [exactReward, numericReward, f1Reward, rougeLReward, containsReward]) {
      const rewards = await score(family, failedOutcome());
      expect(rewards).toEqual([
        expect.objectContaining({
          channel: 'rollout',
          value: 0,
          reason: expect.stringMatching(/no final answer \(rollout failed\)/),
        }),
      ]);
    }
  });
});

describe('exact', () => {
  it('normalizes case, whitespace and trailing periods, and accepts a final answer line', async () => {
    expect(await rolloutValue(exactReward, '  paris. ', textTask)).toBe(1);
    expect(await rolloutValue(exactReward, 'It is in Île-de-France.\nFinal answer: PARIS', textTask)).toBe(1);
    expect(await rolloutValue(exactReward, 'The answer is Paris.', textTask)).toBe(1);
    expect(await rolloutValue(exactReward, 'Paris, I think, or Lyon', textTask)).toBe(0);
    expect(await rolloutValue(exactReward, 'The capital of France is "Paris".', textTask)).toBe(1);
    expect(await rolloutValue(exactReward, 'The capital is "Lyon", not Paris.', textTask)).toBe(0);
    expect(await rolloutValue(exactReward, '', textTask)).toBe(0);
    expect(await rolloutValue(exactReward, '42.0')).toBe(0);
  });
});

describe('numeric', () => {
  const tol = (tolerance: number) => ({ ...mathTask, metadata: { answer_type: 'number', tolerance } });

  it('extracts the final number: commas, negatives, decimals, fractions, units', async () => {
    expect(await rolloutValue(numericReward, 'Final answer: 42.0 apples')).toBe(1);
    expect(await rolloutValue(numericReward, 'six sevens are 42')).toBe(1);
    expect(await rolloutValue(numericReward, 'Answer: 41')).toBe(0);
    expect(await rolloutValue(numericReward, 'no idea')).toBe(0);
    expect(await rolloutValue(numericReward, 'Total: 1,234,567 m', withRef('1234567'))).toBe(1);
    expect(await rolloutValue(numericReward, 'Final answer: -3/4', withRef('-0.75'))).toBe(1);
    expect(await rolloutValue(numericReward, 'That is 0.75', withRef('3/4'))).toBe(1);
    expect(await rolloutValue(numericReward, 'It is \u221212.5 °C', withRef('-12.5'))).toBe(1);
  });

  it('uses the task tolerance, else numeric_tolerance, with 1e-6 relative slack', async () => {
    expect(await rolloutValue(numericReward, '42.4', tol(0.5))).toBe(1);
    expect(await rolloutValue(numericReward, '42.6', tol(0.5))).toBe(0);
    const loose = rewardsConfig({ numeric_tolerance: 1 });
    expect(await rolloutValue(numericReward, '43', { ...mathTask, metadata: {} }, loose)).toBe(1);
    expect(await rolloutValue(numericReward, '43', mathTask, loose)).toBe(0);
    expect(await rolloutValue(numericReward, '1000000.5', withRef('1000000'))).toBe(1);
    expect(await rolloutValue(numericReward, '1000002', withRef('1000000'))).toBe(0);
    expect(await rolloutValue(numericReward, '0.30000000000000004', withRef('0.3', { tolerance: 0 }))).toBe(1);
  });

  it('does not apply to string tasks or non-numeric references', async () => {
    expect(await score(numericReward, mathOutcome({ task: textTask }))).toEqual([]);
    expect(await score(numericReward, mathOutcome({ task: withRef('between 2 and 4') }))).toEqual([]);
  });
});

describe('f1 and rouge_l', () => {
  it('compute token F1 and LCS F-measure', () => {
    expect(tokenF1(['a', 'b', 'c'], ['a', 'b', 'c'])).toBe(1);
    expect(tokenF1(['a', 'b'], ['b', 'c', 'd', 'e'])).toBeCloseTo((2 * 0.5 * 0.25) / 0.75);
    expect(tokenF1([], ['a'])).toBe(0);
    expect(lcsLength(['a', 'b', 'c', 'd'], ['a', 'c', 'd', 'b'])).toBe(3);
    expect(rougeL(['the', 'cat', 'sat'], ['the', 'cat', 'sat'])).toBe(1);
    expect(rougeL(['sat', 'the', 'cat'], ['the', 'cat', 'sat'])).toBeCloseTo(2 / 3);
    expect(rougeL(['x'], ['y'])).toBe(0);
  });

  it('keep the better of the whole answer and its answer line', async () => {
    const ref = withRef('the quick brown fox');
    expect(await rolloutValue(f1Reward, 'The quick, brown fox!', ref)).toBe(1);
    expect(await rolloutValue(f1Reward, 'Long story about animals.\nFinal answer: the quick brown fox', ref)).toBe(1);
    expect(await rolloutValue(f1Reward, 'a quick fox', ref)).toBeCloseTo(4 / 7);
    expect(await rolloutValue(rougeLReward, 'fox brown quick the', ref)).toBeCloseTo(0.25);
    expect(await rolloutValue(rougeLReward, 'the brown fox', ref)).toBeCloseTo((2 * 1 * 0.75) / 1.75);
  });
});

describe('regex', () => {
  it('uses metadata.answer_regex or a /…/ reference, on the answer or its answer line', async () => {
    expect(await rolloutValue(regexReward, 'Final answer: 42', withRef('/^4\\d$/'))).toBe(1);
    expect(await rolloutValue(regexReward, 'Final answer: 52', withRef('/^4\\d$/'))).toBe(0);
    expect(await rolloutValue(regexReward, 'it is PARIS', withRef('/paris/i'))).toBe(1);
    expect(await rolloutValue(regexReward, 'colour', withRef('colou?r', { answer_regex: true }))).toBe(1);
    expect(await rolloutValue(regexReward, 'the color', withRef('red', { answer_regex: '^the colou?r$' }))).toBe(1);
    expect(await score(regexReward, mathOutcome({ task: textTask }))).toEqual([]);
  });

  it('names the task of an invalid pattern', () => {
    expect(() => regexReward.score(ctxFor(mathOutcome({ task: withRef('/([a-/') })))).toThrow(
      /task file:capitals:3: invalid answer regex/,
    );
  });
});

describe('contains', () => {
  it('finds the normalized reference at word boundaries', async () => {
    expect(await rolloutValue(contains(), 'I am sure the capital is PARIS, France.', textTask)).toBe(1);
    expect(await rolloutValue(contains(), 'Parisian food', textTask)).toBe(0);
    expect(await rolloutValue(contains(), 'it is 42 exactly')).toBe(1);
    expect(await rolloutValue(contains(), '420 or 142 or 42.5')).toBe(0);
    expect(await rolloutValue(contains(), 'new   york city', withRef('New York'))).toBe(1);
    expect(await rolloutValue(contains(), 'x (a+b) y', withRef('(a+b)'))).toBe(1);
  });
  function contains() {
    return containsReward;
  }
});

describe('answerQuality', () => {
  it('is exact, else numeric for numeric references, else F1; null without a reference', () => {
    const config = rewardsConfig();
    expect(answerQuality('Final answer: 42', mathTask, config)).toEqual({ value: 1, family: 'exact' });
    expect(answerQuality('42.0', mathTask, config)).toEqual({ value: 1, family: 'numeric' });
    expect(answerQuality('43', mathTask, config)).toEqual({ value: 0, family: 'numeric' });
    expect(answerQuality('Paris, France', textTask, config)).toEqual({ value: 2 / 3, family: 'f1' });
    expect(answerQuality(null, mathTask, config)).toEqual({ value: 0, family: 'exact' });
    expect(answerQuality('x', openTask, config)).toBeNull();
    expect(answerQuality('x', null, config)).toBeNull();
  });
});
