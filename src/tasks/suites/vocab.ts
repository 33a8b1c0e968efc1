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


/** Lowercase words of 3–4 letters, for string_transform level 1. */
export const SHORT_WORDS = [
  'cat', 'dog', 'sun', 'hat', 'pen', 'cup', 'box', 'map', 'bus', 'car', 'egg', 'fox', 'jam', 'key', 'leg', 'net',
  'owl', 'pig', 'rug', 'toy', 'bird', 'book', 'cake', 'door', 'fish', 'frog', 'game', 'kite', 'lamp', 'milk',
  'moon', 'nest', 'rain', 'ship', 'star', 'tree', 'wind', 'wolf', 'desk', 'hand',
];

/** Lowercase words of 8–10 letters, for string_transform level 3. */
export const LONG_WORDS = [
  'adventure', 'basketball', 'butterfly', 'chocolate', 'dinosaur', 'elephant', 'umbrella', 'keyboard', 'mountain',
  'notebook', 'pineapple', 'sandwich', 'telephone', 'treasure', 'vacation', 'waterfall', 'wonderful', 'yesterday',
  'newspaper', 'crocodile', 'hamburger', 'kangaroo', 'lemonade', 'orchestra', 'passenger', 'raspberry', 'scientist',
  'spaghetti', 'breakfast', 'landscape',
];
