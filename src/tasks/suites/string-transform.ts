import type { Rng } from '../prng.js';
import type { Difficulty } from '../types.js';
import { ASK_NUMBER, ASK_STRING, defineSuite, type GeneratedTask } from './define.js';
import { STRINGS_STARTER } from './starter-levels.js';
import { BASIC_TEMPLATES, makeBasic } from './string-basics.js';
import { OPERATIONS, uniqueLetters } from './string-operations.js';
import { LONG_WORDS, WORDS } from './vocab.js';

// Words with a repeated letter make remove_duplicates worth asking.
const REPEATING = WORDS.filter((w) => uniqueLetters(w).length < w.length);
const LONG_REPEATING = LONG_WORDS.filter((w) => uniqueLetters(w).length < w.length);

/** Level 2: one word of 4–7 letters or a phrase of 2–4 words, the first phrasing. Level 3: 8–10 letters or 4–6 words, either phrasing. */
const make =
  (level: 2 | 3) =>
  (rng: Rng): GeneratedTask => {
    const operation = rng.pick(Object.keys(OPERATIONS));
    const op = OPERATIONS[operation]!;
    const input =
      op.input === 'word'
        ? rng.pick(
            operation === 'remove_duplicates'
              ? level === 2
                ? REPEATING
                : LONG_REPEATING
              : level === 2
                ? WORDS
                : LONG_WORDS,
          )
        : rng.sample(WORDS, level === 2 ? rng.int(2, 4) : rng.int(4, 6)).join(' ');
    const letter = operation === 'count_letter' ? rng.pick(uniqueLetters(input)) : '';
    const template = level === 2 ? 0 : rng.int(0, op.questions.length - 1);
    const answer = op.apply(input, letter);
    const numeric = typeof answer === 'number';
    return {
      kind: operation,
      prompt: `${op.questions[template]!(input, letter)} ${numeric ? ASK_NUMBER : ASK_STRING}`,
      reference: String(answer),
      answerType: numeric ? 'number' : 'string',
      // Level 2 has one phrasing per operation, and its metadata stays as it was (task ids are bound to it).
      metadata: { operation, input, ...(letter ? { letter } : {}), ...(level === 2 ? {} : { template }) },
    };
  };

const templatesOf = (count: (questions: number) => number) =>
  Object.fromEntries(
    Object.entries(OPERATIONS).map(([k, op]) => [
      k,
      Array.from({ length: count(op.questions.length) }, (_, i) => String(i)),
    ]),
  );

/** The level used when a task source names none. */
export const STRING_TRANSFORM_DEFAULT_LEVEL: Difficulty = 0;

export const stringTransform = defineSuite({
  name: 'string_transform',
  describe:
    'exact string manipulations: reverse, uppercase, count vowels or a letter, sort letters, remove duplicates, …',
  defaultLevel: STRING_TRANSFORM_DEFAULT_LEVEL,
  levels: {
    0: {
      describe: 'the first or the last letter of a 3–4 letter word, or which of two words is longer',
      ...STRINGS_STARTER,
    },
    1: {
      describe: 'one 3–4 letter word: uppercase it, reverse a 3-letter word, count its letters, name its last letter',
      templates: BASIC_TEMPLATES,
      make: makeBasic,
    },
    2: {
      describe: 'nine operations on a 4–7 letter word or a phrase of 2–4 words',
      templates: templatesOf(() => 1),
      make: make(2),
    },
    3: {
      describe: 'the same nine operations on 8–10 letter words or phrases of 4–6 words, in two phrasings',
      templates: templatesOf((n) => n),
      make: make(3),
    },
  },
});
