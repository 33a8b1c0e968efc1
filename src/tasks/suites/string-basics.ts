import type { Rng } from '../prng.js';
import { ASK_NUMBER, ASK_STRING, type GeneratedTask } from './define.js';
import { SHORT_WORDS } from './vocab.js';

/** string_transform level 1: one short word, one simple operation, three phrasings each. */
interface Basic {
  /** The words it is asked about. */
  words: readonly string[];
  questions: ((w: string) => string)[];
  apply(w: string): string | number;
}

const THREE_LETTER = SHORT_WORDS.filter((w) => w.length === 3);

const BASICS: Record<string, Basic> = {
  uppercase: {
    words: SHORT_WORDS,
    questions: [
      (w) => `Write "${w}" in uppercase letters.`,
      (w) => `Write the word "${w}" in capital letters.`,
      (w) => `Change every letter of "${w}" to uppercase.`,
    ],
    apply: (w) => w.toUpperCase(),
  },
  reverse: {
    words: THREE_LETTER,
    questions: [
      (w) => `Reverse the letters of the word "${w}".`,
      (w) => `Write the word "${w}" backwards.`,
      (w) => `Spell "${w}" from its last letter to its first.`,
    ],
    apply: (w) => [...w].reverse().join(''),
  },
  count_letters: {
    words: SHORT_WORDS,
    questions: [
      (w) => `How many letters are in the word "${w}"?`,
      (w) => `Count the letters of "${w}".`,
      (w) => `How long is the word "${w}", in letters?`,
    ],
    apply: (w) => w.length,
  },
  last_letter: {
    words: SHORT_WORDS,
    questions: [
      (w) => `What is the last letter of the word "${w}"?`,
      (w) => `Which letter does "${w}" end with?`,
      (w) => `Write only the final letter of "${w}".`,
    ],
    apply: (w) => w[w.length - 1]!,
  },
};

export const BASIC_TEMPLATES = Object.fromEntries(
  Object.entries(BASICS).map(([k, b]) => [k, b.questions.map((_, i) => String(i))]),
);

export function makeBasic(rng: Rng): GeneratedTask {
  const operation = rng.pick(Object.keys(BASICS));
  const basic = BASICS[operation]!;
  const input = rng.pick(basic.words);
  const template = rng.int(0, basic.questions.length - 1);
  const answer = basic.apply(input);
  const numeric = typeof answer === 'number';
  return {
    kind: operation,
    prompt: `${basic.questions[template]!(input)} ${numeric ? ASK_NUMBER : ASK_STRING}`,
    reference: String(answer),
    answerType: numeric ? 'number' : 'string',
    metadata: { operation, input, template },
  };
}
