import type { Rng } from '../prng.js';
import { ASK_NUMBER, ASK_STRING, type GeneratedTask } from './define.js';
import { ITEMS, LONG_WORDS, NAMES, SHORT_WORDS } from './vocab.js';

/**
 * Difficulty 0 of every suite: the range where the bundled 135M model's team finds a correct answer often
 * enough to learn from (one operation on single digits, a conversion that multiplies by the factor it was
 * just told, the first or last letter of a short word or the longer of two words, word problems of one or two additions or
 * subtractions of small numbers).
 * Two phrasings per kind, so the template holdout keeps one for eval.
 */
type Phrasings = [string, string];
interface Made {
  answer: number | string;
  values: Record<string, unknown>;
  texts: Phrasings;
}
type Maker = (rng: Rng) => Made;

function levelOf(makers: Record<string, Maker>) {
  return {
    templates: Object.fromEntries(Object.keys(makers).map((kind) => [kind, ['0', '1']])),
    make(rng: Rng): GeneratedTask {
      const kind = rng.pick(Object.keys(makers));
      const made = makers[kind]!(rng);
      const template = rng.int(0, 1);
      const numeric = typeof made.answer === 'number';
      return {
        kind,
        prompt: `${made.texts[template]} ${numeric ? ASK_NUMBER : ASK_STRING}`,
        reference: String(made.answer),
        answerType: numeric ? 'number' : 'string',
        metadata: { ...made.values, template },
      };
    },
  };
}

export const ARITHMETIC_STARTER = levelOf({
  addition: (rng) => {
    const a = rng.int(1, 9),
      b = rng.int(1, 9);
    return {
      answer: a + b,
      values: { operation: 'add', operands: [a, b] },
      texts: [`What is ${a} + ${b}?`, `Add ${a} and ${b}.`],
    };
  },
  subtraction: (rng) => {
    const a = rng.int(3, 9),
      b = rng.int(1, a - 1);
    return {
      answer: a - b,
      values: { operation: 'subtract', operands: [a, b] },
      texts: [`What is ${a} - ${b}?`, `Take ${b} away from ${a}.`],
    };
  },
  multiplication: (rng) => {
    const a = rng.int(2, 5),
      b = rng.int(2, 5);
    return {
      answer: a * b,
      values: { operation: 'multiply', operands: [a, b] },
      texts: [`What is ${a} × ${b}?`, `Multiply ${a} by ${b}.`],
    };
  },
});

/** [big unit, small unit, how many small in one big], for conversions that multiply. */
const UPWARD: Record<string, [string, string, number][]> = {
  length: [
    ['kilometer', 'meters', 1000],
    ['meter', 'centimeters', 100],
  ],
  mass: [['kilogram', 'grams', 1000]],
  volume: [['liter', 'milliliters', 1000]],
  time: [
    ['hour', 'minutes', 60],
    ['minute', 'seconds', 60],
    ['day', 'hours', 24],
    ['week', 'days', 7],
  ],
};

export const UNITS_STARTER = levelOf(
  Object.fromEntries(
    Object.entries(UPWARD).map(([dimension, pairs]) => [
      dimension,
      (rng: Rng): Made => {
        const [big, small, factor] = rng.pick(pairs);
        const k = rng.int(2, 9);
        return {
          answer: k * factor,
          values: { dimension, from: big, to: small, value: k, factor },
          texts: [
            `1 ${big} = ${factor} ${small}. How many ${small} are in ${k} ${big}s?`,
            `How many ${small} are there in ${k} ${big}s? Use 1 ${big} = ${factor} ${small}.`,
          ],
        };
      },
    ]),
  ),
);

export const STRINGS_STARTER = levelOf({
  first_letter: (rng) => {
    const w = rng.pick(SHORT_WORDS);
    return {
      answer: w[0]!,
      values: { operation: 'first_letter', input: w },
      texts: [`What is the first letter of the word "${w}"?`, `Which letter does "${w}" start with?`],
    };
  },
  last_letter: (rng) => {
    const w = rng.pick(SHORT_WORDS);
    return {
      answer: w.at(-1)!,
      values: { operation: 'last_letter', input: w },
      texts: [`What letter is at the end of the word "${w}"?`, `Name the last letter of "${w}".`],
    };
  },
  longer_word: (rng) => {
    const short = rng.pick(SHORT_WORDS),
      long = rng.pick(LONG_WORDS);
    const [a, b] = rng.next() < 0.5 ? [short, long] : [long, short];
    return {
      answer: long,
      values: { operation: 'longer_word', input: `${a} ${b}` },
      texts: [`Which word is longer: "${a}" or "${b}"?`, `Of the words "${a}" and "${b}", which has more letters?`],
    };
  },
});

export const MULTI_STEP_STARTER = levelOf({
  gain_then_lose: (rng) => {
    const name = rng.pick(NAMES),
      items = rng.pick(ITEMS),
      a = rng.int(2, 5),
      b = rng.int(1, 3),
      c = rng.int(1, 2);
    return {
      answer: a + b - c,
      values: { scenario: 'gain_then_lose', steps: 2, values: { a, b, c } },
      texts: [
        `${name} has ${a} ${items}. ${name} gets ${b} more ${items} and then loses ${c}. How many ${items} does ${name} have now?`,
        `A box holds ${a} ${items}. ${b} ${items} ${b === 1 ? 'is' : 'are'} put in and then ${c} ${c === 1 ? 'is' : 'are'} taken out. How many ${items} are in the box?`,
      ],
    };
  },
  together: (rng) => {
    const [name, other] = rng.sample(NAMES, 2),
      items = rng.pick(ITEMS),
      a = rng.int(1, 5),
      b = rng.int(1, 5);
    return {
      answer: a + b,
      values: { scenario: 'together', steps: 1, values: { a, b } },
      texts: [
        `${name} has ${a} ${items}. ${other} has ${b} ${items}. How many ${items} do they have together?`,
        `There are ${a} ${items} on a table and ${b} ${items} on a chair. How many ${items} are there in all?`,
      ],
    };
  },
  give_away: (rng) => {
    const name = rng.pick(NAMES),
      items = rng.pick(ITEMS),
      a = rng.int(4, 9),
      b = rng.int(1, 3);
    return {
      answer: a - b,
      values: { scenario: 'give_away', steps: 1, values: { a, b } },
      texts: [
        `${name} has ${a} ${items} and gives ${b} away. How many ${items} does ${name} have left?`,
        `There are ${a} ${items} in a bag. ${b} ${b === 1 ? 'is' : 'are'} taken out. How many ${items} are left in the bag?`,
      ],
    };
  },
});
