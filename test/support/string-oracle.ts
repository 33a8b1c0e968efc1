/** Each string_transform operation computed independently of the suite's generators, to check its references. */
export const STRING_ORACLE: Record<string, (s: string, letter: string) => string> = {
  reverse: (s) => s.split('').reverse().join(''),
  uppercase: (s) => s.toUpperCase(),
  count_letters: (s) => String(s.length),
  last_letter: (s) => s.slice(-1),
  count_vowels: (s) => String(s.replace(/[^aeiou]/g, '').length),
  sort_letters: (s) => s.split('').sort().join(''),
  remove_duplicates: (s) =>
    s
      .split('')
      .filter((c, i) => s.indexOf(c) === i)
      .join(''),
  count_letter: (s, c) => String(s.split(c).length - 1),
  reverse_words: (s) => s.split(' ').reverse().join(' '),
  acronym: (s) =>
    s
      .split(' ')
      .map((w) => w.charAt(0))
      .join('')
      .toUpperCase(),
  capitalize_words: (s) => s.replace(/\b[a-z]/g, (c) => c.toUpperCase()),
};
