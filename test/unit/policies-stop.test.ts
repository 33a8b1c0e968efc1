import { describe, expect, it } from 'vitest';
import {
  STOP_FEATURES,
  fit,
  newPolicy,
  probabilities,
  stopFeatures,
  uniform,
  type PolicySpec,
  type Sample,
} from '../../src/policies/index.js';
import { Rng } from '../../src/tasks/prng.js';

/*
 * A synthetic stopping environment. A team of 3 runs up to 4 rounds. Vote agreement is a Markov chain over
 * levels 1/3, 2/3, 1 (index 0..2); stopping at round r with agreement g pays Bernoulli(g) − 0.1·r.
 * From 1/3, one more round raises the expected quality by 0.7·(1/3) + 0.1·(2/3) = 0.3 > 0.1 (the cost);
 * from 2/3 only by 0.2·(1/3) ≈ 0.067 < 0.1, and agreement never falls, so by the one-step-lookahead rule of a
 * monotone stopping problem the optimal rule is: stop as soon as agreement ≥ 2/3 (easy tasks start at full
 * agreement and stop at round 1), otherwise run to the last round.
 */
const MAX_ROUNDS = 4;
const TEAM = 3;
const COST = 0.1;
const START = [0.4, 0.3, 0.3];
const NEXT = [
  [0.2, 0.7, 0.1],
  [0, 0.8, 0.2],
  [0, 0, 1],
];
const AGREEMENT = [1 / 3, 2 / 3, 1];
const ANSWERS = [
  'the answer is 42 because of alpha',
  'the result is 17 since gamma delta',
  'maybe 9 from zeta eta theta',
];
const VOTES = [
  [1, 1, 1],
  [2, 1, 0],
  [3, 0, 0],
];

/** The features the orchestrator would see at this round and agreement level (deterministic, so values are exact). */
const featuresAt = (round: number, level: number) =>
  stopFeatures({
    round,
    maxRounds: MAX_ROUNDS,
    teamSize: TEAM,
    liveAgents: TEAM,
    answers:
      level === 0
        ? ANSWERS
        : level === 1
          ? [ANSWERS[0]!, ANSWERS[0]!, ANSWERS[1]!]
          : [ANSWERS[0]!, ANSWERS[0]!, ANSWERS[0]!],
    voteCounts: VOTES[level]!,
    tokens: 1500 * TEAM * round,
    elapsedMs: 20_000 * round,
  });

type Rule = (x: number[], level: number) => boolean; // true: stop now

/** The exact expected reward of a stopping rule, by recursion over the chain. */
function value(rule: Rule): number {
  const v = (round: number, level: number): number => {
    if (round === MAX_ROUNDS || rule(featuresAt(round, level), level)) return AGREEMENT[level]! - COST * round;
    return NEXT[level]!.reduce((s, p, next) => s + (p ? p * v(round + 1, next) : 0), 0);
  };
  return START.reduce((s, p, level) => s + p * v(1, level), 0);
}

const draw = (rng: Rng, probs: readonly number[]) => {
  let u = rng.next();
  for (let i = 0; i < probs.length; i++) if ((u -= probs[i]!) < 0) return i;
  return probs.length - 1;
};

/** Episodes logged with uniform exploration (arms continue/stop); each decision is paired with its episode's final reward. */
function loggedEpisodes(episodes: number, seed: number): Sample[] {
  const rng = new Rng(seed);
  const data: Sample[] = [];
  for (let e = 0; e < episodes; e++) {
    let level = draw(rng, START);
    let round = 1;
    const steps: { x: number[]; arm: number }[] = [];
    for (; round < MAX_ROUNDS; round++) {
      const d = uniform(2, e * MAX_ROUNDS + round);
      steps.push({ x: featuresAt(round, level), arm: d.arm });
      if (d.arm === 1) break;
      level = draw(rng, NEXT[level]!);
    }
    const reward = (rng.next() < AGREEMENT[level]! ? 1 : 0) - COST * round;
    for (const s of steps) data.push({ ...s, reward });
  }
  return data;
}

const greedyStops =
  (p: PolicySpec): Rule =>
  (x) =>
    probabilities(p, x, { epsilon: 0, explore: false, seed: 0 })[1] === 1;

describe('learning a stopping rule from uniformly logged episodes', () => {
  const optimal = value((_x, level) => level >= 1);
  const neverEarly = value(() => false); // the fixed max_rounds baseline
  const data = loggedEpisodes(2000, 11);

  it('the environment has the optimal rule it claims', () => {
    // No other deterministic rule over (round, level) beats it: enumerate all 2^9 of them.
    for (let mask = 0; mask < 2 ** 9; mask++) {
      const rule: Rule = (x, level) => Boolean(mask & (1 << ((Math.round(x[1]! * MAX_ROUNDS) - 1) * 3 + level)));
      expect(value(rule)).toBeLessThanOrEqual(optimal + 1e-12);
    }
    expect(optimal - neverEarly).toBeGreaterThan(0.15);
  });

  it.each(['linucb', 'thompson'] as const)(
    '%s: the learned greedy rule is within 0.015 of the optimal value and beats never stopping early',
    (algorithm) => {
      const p = fit(newPolicy('stop', algorithm, ['continue', 'stop'], STOP_FEATURES), data);
      const learned = value(greedyStops(p));
      expect(learned).toBeGreaterThanOrEqual(optimal - 0.015);
      expect(learned).toBeGreaterThan(neverEarly + 0.1);
      // And it makes the optimal choice where it matters most: stop on easy tasks at round 1, continue on split votes.
      expect(greedyStops(p)(featuresAt(1, 2), 2)).toBe(true);
      expect(greedyStops(p)(featuresAt(1, 0), 0)).toBe(false);
    },
  );

  it('a learner fed the rewards with the wrong sign does worse than never stopping early', () => {
    const p = fit(
      newPolicy('stop', 'linucb', ['continue', 'stop'], STOP_FEATURES),
      data.map((d) => ({ ...d, reward: -d.reward })),
    );
    expect(value(greedyStops(p))).toBeLessThan(neverEarly);
  });
});
