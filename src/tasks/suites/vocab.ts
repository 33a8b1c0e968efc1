/** Shared words for the generated prompts. */
export const NAMES = ['Alice', 'Ben', 'Carla', 'David', 'Emma', 'Farid', 'Grace', 'Hiro', 'Ines', 'Jamal', 'Kira', 'Leo', 'Maya', 'Noah', 'Olga', 'Priya'];

export const ITEMS = ['apples', 'marbles', 'stickers', 'pencils', 'cookies', 'stamps', 'cards', 'shells', 'coins', 'books'];

/** Lowercase words of 4–9 letters, for the string suite. */
export const WORDS = [
  'apple', 'balloon', 'banana', 'bottle', 'bridge', 'candle', 'castle', 'coffee', 'cotton', 'desert',
  'dinner', 'engine', 'forest', 'garden', 'guitar', 'hammer', 'island', 'jacket', 'kitten', 'ladder',
  'lemon', 'letter', 'market', 'mirror', 'monkey', 'number', 'orange', 'pepper', 'planet', 'puzzle',
  'rabbit', 'river', 'rocket', 'school', 'silver', 'summer', 'tomato', 'tunnel', 'valley', 'window',
  'yellow', 'zipper', 'cloud', 'green', 'stone', 'music', 'table', 'paper',
];

