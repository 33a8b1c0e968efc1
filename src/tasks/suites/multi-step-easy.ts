import type { Rng } from '../prng.js';
import { scenarioTask, type GeneratedTask } from './define.js';
import { ITEMS, NAMES } from './vocab.js';

/** multi_step level 1: two-step problems whose numbers are all single digits, in two phrasings each. */
interface Easy {
  values: Record<string, number>;
  answer: number;
  texts: [string, string];
}

type Builder = (rng: Rng, v: { name: string; other: string; items: string }) => Easy;

const EASY: Record<string, Builder> = {
  giveaway: (rng, { name, items }) => {
    const a = rng.int(2, 5),
      b = rng.int(2, 9),
      c = rng.int(1, Math.min(9, a * b - 1));
    return {
      values: { a, b, c },
      answer: a * b - c,
      texts: [
        `${name} has ${a} boxes with ${b} ${items} in each box. ${name} gives away ${c} ${items}. How many ${items} does ${name} have left?`,
        `There are ${a} bags of ${b} ${items}. ${c} of the ${items} ${c === 1 ? 'is' : 'are'} given away. How many ${items} are left?`,
      ],
    };
  },
  packs: (rng, { name, items }) => {
    const a = rng.int(2, 5),
      b = rng.int(2, 9),
      c = rng.int(1, 9);
    return {
      values: { a, b, c },
      answer: a * b + c,
      texts: [
        `${name} buys ${a} packs of ${b} ${items} and then finds ${c} more ${items}. How many ${items} does ${name} have now?`,
        `A teacher has ${a} packs with ${b} ${items} in each and ${c} extra ${items}. How many ${items} does the teacher have in total?`,
      ],
    };
  },
  allowance: (rng, { name }) => {
    const a = rng.int(1, 9),
      b = rng.int(1, 9),
      c = rng.int(2, 7);
    return {
      values: { a, b, c },
      answer: a + b * c,
      texts: [
        `${name} has $${a} and earns $${b} each day for ${c} days. How many dollars does ${name} have now?`,
        `${name} starts with ${a} dollars and saves ${b} dollars every day. How many dollars does ${name} have after ${c} days?`,
      ],
    };
  },
  sharing: (rng, { name, other, items }) => {
    // The total splits evenly, and both parts stay single digits.
    const c = rng.int(2, 3),
      total = c * rng.int(2, 4);
    const a = rng.int(Math.max(1, total - 9), Math.min(9, total - 1)),
      b = total - a;
    return {
      values: { a, b, c },
      answer: total / c,
      texts: [
        `${name} has ${a} ${items} and gets ${b} more. ${name} shares them equally among ${c} friends. How many ${items} does each friend get?`,
        `${name} has ${a} ${items} and ${other} has ${b}. They put them together and split them equally into ${c} groups. How many ${items} are in each group?`,
      ],
    };
  },
  older: (rng, { name, other }) => {
    const a = rng.int(2, 9),
      b = rng.int(1, 9),
      c = rng.int(1, 9);
    return {
      values: { a, b, c },
      answer: a + b + c,
      texts: [
        `${name} is ${a} years old. ${other} is ${b} years older than ${name}. How old will ${other} be in ${c} years?`,
        `${other} is ${b} years older than ${name}, who is ${a}. How old will ${other} be ${c} years from now?`,
      ],
    };
  },
};

export const EASY_TEMPLATES = Object.fromEntries(Object.keys(EASY).map((k) => [k, ['0', '1']]));

export function makeEasy(rng: Rng): GeneratedTask {
  const scenario = rng.pick(Object.keys(EASY));
  const [name, other] = rng.sample(NAMES, 2) as [string, string];
  const s = EASY[scenario]!(rng, { name, other, items: rng.pick(ITEMS) });
  return scenarioTask(scenario, s, 2, rng.int(0, 1));
}
