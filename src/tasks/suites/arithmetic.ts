import type { Rng } from '../prng.js';
import { ASK_NUMBER, defineSuite, type GeneratedTask } from './define.js';
import { ITEMS, NAMES } from './vocab.js';

type Operation = 'add' | 'subtract' | 'multiply' | 'divide';
type Template = (a: number, b: number, v: { name: string; other: string; items: string }) => string;

const KIND: Record<Operation, string> = { add: 'addition', subtract: 'subtraction', multiply: 'multiplication', divide: 'division' };

const TEMPLATES: Record<Operation, Template[]> = {
  add: [
    (a, b, v) => `${v.name} has ${a} ${v.items}. ${v.other} gives ${v.name} ${b} more. How many ${v.items} does ${v.name} have now?`,
    (a, b) => `One shelf holds ${a} books and another holds ${b} books. How many books are on the two shelves together?`,
    (a, b) => `What is ${a} plus ${b}?`,
    (a, b) => `A school has ${a} students in the morning group and ${b} students in the afternoon group. How many students is that in total?`,
  ],
  subtract: [
    (a, b, v) => `${v.name} had ${a} ${v.items} and gave ${b} of them to ${v.other}. How many ${v.items} does ${v.name} have left?`,
    (a, b) => `A bus carries ${a} passengers. At the next stop ${b} passengers get off and nobody gets on. How many passengers are still on the bus?`,
    (a, b) => `What is ${a} minus ${b}?`,
    (a, b, v) => `${v.name} needs ${a} points to win a game and has scored ${b} so far. How many more points does ${v.name} need?`,
  ],
  multiply: [
    (a, b, v) => `There are ${a} boxes with ${b} ${v.items} in each box. How many ${v.items} are there altogether?`,
    (a, b, v) => `${v.name} reads ${b} pages every day for ${a} days. How many pages does ${v.name} read in total?`,
    (a, b) => `What is ${a} times ${b}?`,
    (a, b) => `A garden has ${a} rows of plants with ${b} plants in each row. How many plants are in the garden?`,
  ],
  divide: [
    (a, b, v) => `${v.name} shares ${a} ${v.items} equally among ${b} friends. How many ${v.items} does each friend get?`,
    (a, b) => `A ribbon ${a} centimeters long is cut into ${b} pieces of equal length. How long is each piece, in centimeters?`,
    (a, b) => `What is ${a} divided by ${b}?`,
    (a, b) => `${a} players are split into teams of ${b}. How many teams are there?`,
  ],
};

/** Operands chosen so every result is a positive integer. */
function operands(op: Operation, rng: Rng): [number, number, number] {
  switch (op) {
    case 'add': {
      const a = rng.int(2, 99), b = rng.int(2, 99);
      return [a, b, a + b];
    }
    case 'subtract': {
      const a = rng.int(10, 99), b = rng.int(2, a - 1);
      return [a, b, a - b];
    }
    case 'multiply': {
      const a = rng.int(2, 12), b = rng.int(2, 15);
      return [a, b, a * b];
    }
    case 'divide': {
      const b = rng.int(2, 12), q = rng.int(2, 15);
      return [b * q, b, q];
    }
  }
}

function make(rng: Rng): GeneratedTask {
  const operation = rng.pick(['add', 'subtract', 'multiply', 'divide'] as const);
  const [a, b, result] = operands(operation, rng);
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
}

export const arithmetic = defineSuite(
  'arithmetic',
  'one-step word problems with small integers (+ − × ÷, integer results)',
  make,
);
