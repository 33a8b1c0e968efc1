import type { Rng } from '../prng.js';
import type { Difficulty } from '../types.js';
import { ASK_NUMBER, defineSuite, type GeneratedTask } from './define.js';
import { ARITHMETIC_STARTER } from './starter-levels.js';
import { ITEMS, NAMES } from './vocab.js';

type Operation = 'add' | 'subtract' | 'multiply' | 'divide';
type Template = (a: number, b: number, v: { name: string; other: string; items: string }) => string;

const KIND: Record<Operation, string> = {
  add: 'addition',
  subtract: 'subtraction',
  multiply: 'multiplication',
  divide: 'division',
};

const TEMPLATES: Record<Operation, Template[]> = {
  add: [
    (a, b, v) =>
      `${v.name} has ${a} ${v.items}. ${v.other} gives ${v.name} ${b} more. How many ${v.items} does ${v.name} have now?`,
    (a, b) =>
      `One shelf holds ${a} books and another holds ${b} books. How many books are on the two shelves together?`,
    (a, b) => `What is ${a} plus ${b}?`,
    (a, b) =>
      `A school has ${a} students in the morning group and ${b} students in the afternoon group. How many students is that in total?`,
  ],
  subtract: [
    (a, b, v) =>
      `${v.name} had ${a} ${v.items} and gave ${b} of them to ${v.other}. How many ${v.items} does ${v.name} have left?`,
    (a, b) =>
      `A bus carries ${a} passengers. At the next stop ${b} passengers get off and nobody gets on. How many passengers are still on the bus?`,
    (a, b) => `What is ${a} minus ${b}?`,
    (a, b, v) =>
      `${v.name} needs ${a} points to win a game and has scored ${b} so far. How many more points does ${v.name} need?`,
  ],
  multiply: [
    (a, b, v) => `There are ${a} boxes with ${b} ${v.items} in each box. How many ${v.items} are there altogether?`,
    (a, b, v) => `${v.name} reads ${b} pages every day for ${a} days. How many pages does ${v.name} read in total?`,
    (a, b) => `What is ${a} times ${b}?`,
    (a, b) => `A garden has ${a} rows of plants with ${b} plants in each row. How many plants are in the garden?`,
  ],
  divide: [
    (a, b, v) =>
      `${v.name} shares ${a} ${v.items} equally among ${b} friends. How many ${v.items} does each friend get?`,
    (a, b) =>
      `A ribbon ${a} centimeters long is cut into ${b} pieces of equal length. How long is each piece, in centimeters?`,
    (a, b) => `What is ${a} divided by ${b}?`,
    (a, b) => `${a} players are split into teams of ${b}. How many teams are there?`,
  ],
};

type Range = [number, number];
/** Operand ranges of one level. subtract: b from `low` to a − 1; divide: b × q ÷ b. */
interface Ranges {
  add: [Range, Range];
  subtract: [Range, number];
  multiply: [Range, Range];
  divide: [Range, Range];
}

const RANGES: Record<Exclude<Difficulty, 0>, Ranges> = {
  1: {
    add: [
      [1, 9],
      [1, 9],
    ],
    subtract: [[3, 9], 1],
    multiply: [
      [2, 9],
      [2, 5],
    ],
    divide: [
      [2, 5],
      [2, 5],
    ],
  },
  2: {
    add: [
      [2, 99],
      [2, 99],
    ],
    subtract: [[10, 99], 2],
    multiply: [
      [2, 12],
      [2, 15],
    ],
    divide: [
      [2, 12],
      [2, 15],
    ],
  },
  3: {
    add: [
      [100, 999],
      [100, 999],
    ],
    subtract: [[200, 999], 100],
    multiply: [
      [11, 99],
      [3, 9],
    ],
    divide: [
      [3, 9],
      [11, 99],
    ],
  },
};

/** Operands chosen so every result is a positive integer. */
function operands(op: Operation, r: Ranges, rng: Rng): [number, number, number] {
  switch (op) {
    case 'add': {
      const a = rng.int(...r.add[0]),
        b = rng.int(...r.add[1]);
      return [a, b, a + b];
    }
    case 'subtract': {
      const a = rng.int(...r.subtract[0]),
        b = rng.int(r.subtract[1], a - 1);
      return [a, b, a - b];
    }
    case 'multiply': {
      const a = rng.int(...r.multiply[0]),
        b = rng.int(...r.multiply[1]);
      return [a, b, a * b];
    }
    case 'divide': {
      const b = rng.int(...r.divide[0]),
        q = rng.int(...r.divide[1]);
      return [b * q, b, q];
    }
  }
}

const make =
  (ranges: Ranges) =>
  (rng: Rng): GeneratedTask => {
    const operation = rng.pick(['add', 'subtract', 'multiply', 'divide'] as const);
    const [a, b, result] = operands(operation, ranges, rng);
    const template = rng.int(0, TEMPLATES[operation].length - 1);
    const [name, other] = rng.sample(NAMES, 2) as [string, string];
    const story = TEMPLATES[operation][template]!(a, b, { name, other, items: rng.pick(ITEMS) });
    return {
      kind: KIND[operation],
      prompt: `${story} ${ASK_NUMBER}`,
      reference: String(result),
      answerType: 'number',
      metadata: { operation, operands: [a, b], template },
    };
  };

/** The level used when a task source names none. */
export const ARITHMETIC_DEFAULT_LEVEL: Difficulty = 0;

const templates = Object.fromEntries(
  (Object.keys(KIND) as Operation[]).map((op) => [KIND[op], TEMPLATES[op].map((_, i) => String(i))]),
);
const level = (describe: string, d: Exclude<Difficulty, 0>) => ({ describe, templates, make: make(RANGES[d]) });

export const arithmetic = defineSuite({
  name: 'arithmetic',
  describe: 'one-step word problems with small integers (+ − × ÷, integer results)',
  defaultLevel: ARITHMETIC_DEFAULT_LEVEL,
  levels: {
    0: {
      describe: 'one +, − or × of single digits, written as a bare expression (What is 4 + 3?)',
      ...ARITHMETIC_STARTER,
    },
    1: level('single-digit operands: sums and differences of 1–9, products up to 9 × 5, quotients up to 25 ÷ 5', 1),
    2: level('operands up to 99 for + and −, up to 12 × 15, quotients up to 180 ÷ 12', 2),
    3: level('3-digit + and −, 2-digit × 1-digit, up to 3-digit ÷ 1-digit with a 2-digit quotient', 3),
  },
});
