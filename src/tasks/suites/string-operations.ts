/** string_transform's operations at levels 2 and 3. */
export interface Operation {
  /** Works on a single word, or on a phrase (2–4 words at level 2, 4–6 at level 3). */
  input: 'word' | 'phrase';
  /** Its phrasings (templates); the first is the level 2 one. */
  questions: ((input: string, letter: string) => string)[];
  apply(input: string, letter: string): string | number;
}

const VOWELS = new Set(['a', 'e', 'i', 'o', 'u']);
export const uniqueLetters = (s: string) => [...new Set(s.replace(/ /g, ''))];

export const OPERATIONS: Record<string, Operation> = {
  reverse: {
    input: 'word',
    questions: [
      (w) => `Reverse the letters of the word "${w}".`,
      (w) => `Write the letters of "${w}" in reverse order.`,
    ],
    apply: (w) => [...w].reverse().join(''),
  },
  uppercase: {
    input: 'phrase',
    questions: [(p) => `Write "${p}" in uppercase letters.`, (p) => `Convert "${p}" to capital letters.`],
    apply: (p) => p.toUpperCase(),
  },
  count_vowels: {
    input: 'phrase',
    questions: [
      (p) => `How many vowels are in "${p}"? Count every a, e, i, o and u (y is not a vowel).`,
      (p) => `Count the vowels (a, e, i, o and u; y is not a vowel) in "${p}".`,
    ],
    apply: (p) => [...p].filter((c) => VOWELS.has(c)).length,
  },
  sort_letters: {
    input: 'word',
    questions: [
      (w) => `Sort the letters of "${w}" in alphabetical order and write them as one word.`,
      (w) => `Rearrange the letters of "${w}" into alphabetical order, written as one word.`,
    ],
    apply: (w) => [...w].sort().join(''),
  },
  remove_duplicates: {
    input: 'word',
    questions: [
      (w) => `Remove the repeated letters from "${w}", keeping only the first occurrence of each letter in order.`,
      (w) => `Write "${w}" with every repeated letter removed, keeping the first occurrence of each letter in order.`,
    ],
    apply: (w) => uniqueLetters(w).join(''),
  },
  count_letter: {
    input: 'phrase',
    questions: [
      (p, c) => `How many times does the letter "${c}" appear in "${p}"?`,
      (p, c) => `Count how often the letter "${c}" occurs in "${p}".`,
    ],
    apply: (p, c) => [...p].filter((x) => x === c).length,
  },
  reverse_words: {
    input: 'phrase',
    questions: [
      (p) => `Reverse the order of the words in "${p}".`,
      (p) => `Write the words of "${p}" in reverse order.`,
    ],
    apply: (p) => p.split(' ').reverse().join(' '),
  },
  acronym: {
    input: 'phrase',
    questions: [
      (p) => `Take the first letter of each word in "${p}" and write them together as one uppercase word.`,
      (p) => `Form an uppercase acronym from the first letters of the words in "${p}".`,
    ],
    apply: (p) =>
      p
        .split(' ')
        .map((w) => w[0]!.toUpperCase())
        .join(''),
  },
  capitalize_words: {
    input: 'phrase',
    questions: [
      (p) => `Capitalize the first letter of each word in "${p}" and keep the other letters lowercase.`,
      (p) => `Rewrite "${p}" with the first letter of every word in uppercase and the other letters in lowercase.`,
    ],
    apply: (p) =>
      p
        .split(' ')
        .map((w) => w[0]!.toUpperCase() + w.slice(1))
        .join(' '),
  },
};
