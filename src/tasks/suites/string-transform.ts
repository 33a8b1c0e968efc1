import type { Rng } from '../prng.js';
import { ASK_NUMBER, ASK_STRING, defineSuite, type GeneratedTask } from './define.js';
import { WORDS } from './vocab.js';

interface Operation {
  /** Works on a single word, or on a phrase of 2–4 words. */
  input: 'word' | 'phrase';
  question(input: string, letter: string): string;
  apply(input: string, letter: string): string | number;
}

const VOWELS = new Set(['a', 'e', 'i', 'o', 'u']);
const uniqueLetters = (s: string) => [...new Set(s.replace(/ /g, ''))];

export const OPERATIONS: Record<string, Operation> = {
  reverse: {
    input: 'word',
    question: (w) => `Reverse the letters of the word "${w}".`,
    apply: (w) => [...w].reverse().join(''),
  },
  uppercase: {
    input: 'phrase',
    question: (p) => `Write "${p}" in uppercase letters.`,
    apply: (p) => p.toUpperCase(),
  },
  count_vowels: {
    input: 'phrase',
    question: (p) => `How many vowels are in "${p}"? Count every a, e, i, o and u (y is not a vowel).`,
    apply: (p) => [...p].filter((c) => VOWELS.has(c)).length,
  },
  sort_letters: {
    input: 'word',
    question: (w) => `Sort the letters of "${w}" in alphabetical order and write them as one word.`,
    apply: (w) => [...w].sort().join(''),
  },
  remove_duplicates: {
    input: 'word',
    question: (w) => `Remove the repeated letters from "${w}", keeping only the first occurrence of each letter in order.`,
    apply: (w) => uniqueLetters(w).join(''),
  },
  count_letter: {
    input: 'phrase',
    question: (p, c) => `How many times does the letter "${c}" appear in "${p}"?`,
    apply: (p, c) => [...p].filter((x) => x === c).length,
  },
  reverse_words: {
    input: 'phrase',
    question: (p) => `Reverse the order of the words in "${p}".`,
    apply: (p) => p.split(' ').reverse().join(' '),
  },
  acronym: {
    input: 'phrase',
    question: (p) => `Take the first letter of each word in "${p}" and write them together as one uppercase word.`,
    apply: (p) => p.split(' ').map((w) => w[0]!.toUpperCase()).join(''),
  },
  capitalize_words: {
    input: 'phrase',
    question: (p) => `Capitalize the first letter of each word in "${p}" and keep the other letters lowercase.`,
    apply: (p) => p.split(' ').map((w) => w[0]!.toUpperCase() + w.slice(1)).join(' '),
  },
};

// Words with a repeated letter make remove_duplicates worth asking.
const REPEATING = WORDS.filter((w) => uniqueLetters(w).length < w.length);

function make(rng: Rng): GeneratedTask {
  const operation = rng.pick(Object.keys(OPERATIONS));
  const op = OPERATIONS[operation]!;
  const input = op.input === 'word'
    ? rng.pick(operation === 'remove_duplicates' ? REPEATING : WORDS)
    : rng.sample(WORDS, rng.int(2, 4)).join(' ');
  const letter = operation === 'count_letter' ? rng.pick(uniqueLetters(input)) : '';
  const answer = op.apply(input, letter);
  const numeric = typeof answer === 'number';
  return {
    kind: operation,
    prompt: `${op.question(input, letter)} ${numeric ? ASK_NUMBER : ASK_STRING}`,
    reference: String(answer),
    answerType: numeric ? 'number' : 'string',
    metadata: { operation, input, ...(letter ? { letter } : {}) },
  };
}

export const stringTransform = defineSuite(
  'string_transform',
  'exact string manipulations: reverse, uppercase, count vowels or a letter, sort letters, remove duplicates, …',
  make,
);
