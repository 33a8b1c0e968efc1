import fc from 'fast-check';

/**
 * Hostile values for mutated inputs. Numbers sit at and beyond the schema's ceilings (2^31 ms timers,
 * 32-bit seeds, 65535 ports, one day / one week in ms and s, MAX_TASKS) and beyond what JSON and YAML
 * can carry exactly; strings are prototype names, URLs with odd schemes, regexes, env references, paths
 * and unicode that tends to break naive code.
 */
export const NUMBERS = [
  0,
  -0,
  1,
  -1,
  0.5,
  -0.5,
  1e-7,
  5e-324,
  2,
  3,
  7,
  8,
  63,
  64,
  65,
  1000,
  1001,
  1024,
  1025,
  3600,
  65_535,
  65_536,
  100_000,
  100_001,
  86_400,
  86_401,
  604_800,
  604_801,
  1_000_000,
  1_000_001,
  86_400_000,
  86_400_001,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32 - 1,
  2 ** 32,
  -(2 ** 31),
  2 ** 53,
  2 ** 53 + 2,
  1e21,
  1e308,
  -1e308,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
] as const;

/** Written into the file as they are (YAML reads several of them as numbers: .nan, .inf, 0x…). */
export const RAW_NUMBER_TEXTS = [
  '.nan',
  '.NaN',
  '.inf',
  '-.inf',
  '+.inf',
  'NaN',
  'Infinity',
  '-Infinity',
  '1e999',
  '-1e999',
  '1e-400',
  '0x7fffffff',
  '0x80000000',
  '0o17',
  '0b101',
  '1_000',
  '2147483648',
  '4294967296',
  '9007199254740993',
  '123456789012345678901234567890',
  '+1',
  '01',
  '.5',
  '5.',
  '-0',
  '1e21',
  '~',
  'null',
  'true',
  'yes',
  'off',
] as const;

export const PROTOTYPE_NAMES = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  '__defineGetter__',
  'isPrototypeOf',
] as const;

export const URLS = [
  'file:///etc/passwd',
  'ftp://example.com/v1',
  'javascript:alert(1)',
  'data:text/plain,hi',
  'ws://127.0.0.1:1/v1',
  'gopher://x',
  'http://',
  'http://[::1',
  'http://user:pass@127.0.0.1:1/v1',
  'HTTP://LOCALHOST:0/v1',
  'http://127.0.0.1:99999/v1',
  'http://%00/',
  'https://exa mple.com',
  'http://127.0.0.1:0/v1',
  '//127.0.0.1/v1',
  'localhost:8000',
  'http://[::]:1/v1',
  'https://例え.テスト/v1',
] as const;

export const REGEXES = [
  '(a+)+$',
  '(?<x>a)\\k<x>',
  '[',
  '(',
  '\\',
  '*',
  '(?=',
  '.*',
  '^$',
  '\\1',
  'x{99999}',
  '(?<=a)b',
  '\\p{L}+',
  '[^]',
  '|',
  '(?:)',
] as const;

export const ENV_REFS = [
  '${FUZZ_KEY}',
  '${FUZZ_UNSET_VARIABLE}',
  '${',
  '$${FUZZ_KEY}',
  '${FUZZ_KEY:-fallback}',
  '${ FUZZ_KEY }',
  '${__proto__}',
  '${1X}',
] as const;

/** Relative names only: a mutated path never points the CLI at a place outside the case directory to write. */
export const PATHS = [
  'missing/dir/file.md',
  'sub/../solver.md',
  'solver.md',
  'tasks.jsonl',
  ' ',
  '.',
  'ünï côdé.yaml',
  'a\u0000b',
  '-rf',
  'CON',
  '*.jsonl',
] as const;

export const UNICODE = [
  'é',
  '💥',
  '\u202eevil',
  '\u200b',
  'zero\u0000byte',
  '\ud800',
  '\udfff\ud800',
  'ℌ𝔢𝔩𝔩𝔬',
  '١٢٣',
  'Ａ１',
  'e\u0301',
  '\r',
  '\n\n',
  '\t',
  '\u2028',
  '\ufeff',
  '\\u0000',
  '"',
  "'",
  '`',
  '{{',
  '}}',
  '<script>',
  '%s%n',
  '..',
  'sk-abcdefghijklmnopqrstuvwxyz012345',
] as const;

/** Short keys for added or renamed entries: a prototype name, a plausible field name, or noise. */
export const keyArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...PROTOTYPE_NAMES) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'id',
      'model',
      'file',
      'text',
      'n',
      'seed',
      'weights',
      'local',
      'base_url',
      'timeout_ms',
      'tasks',
      'prompt',
      'metadata',
      'reference',
      'category',
      'label',
      'timestamp',
      'agent_id',
      'events',
      'x',
    ),
  },
  { weight: 2, arbitrary: fc.constantFrom(...UNICODE) },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
);

/** A hostile scalar; `raw` texts are written unquoted (see RawText). */
export type Hostile = string | number | boolean | null | RawText | Hostile[] | { [key: string]: Hostile };

/** Text written into a document exactly as it is, unquoted. */
export class RawText {
  constructor(readonly text: string) {}
}

const scalarArb: fc.Arbitrary<Hostile> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...NUMBERS) },
  { weight: 3, arbitrary: fc.constantFrom(...RAW_NUMBER_TEXTS).map((t) => new RawText(t)) },
  { weight: 2, arbitrary: fc.constantFrom(...PROTOTYPE_NAMES) },
  { weight: 2, arbitrary: fc.constantFrom(...URLS) },
  { weight: 1, arbitrary: fc.constantFrom(...REGEXES) },
  { weight: 1, arbitrary: fc.constantFrom(...ENV_REFS) },
  { weight: 1, arbitrary: fc.constantFrom(...PATHS) },
  { weight: 2, arbitrary: fc.constantFrom(...UNICODE) },
  { weight: 1, arbitrary: fc.constantFrom(true, false, null, '', ' ') },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 70_000 }).map((n) => 'x'.repeat(n)) },
  { weight: 1, arbitrary: fc.double() },
);

/** A hostile value: mostly scalars, sometimes a small list or mapping of them. */
export const valueArb: fc.Arbitrary<Hostile> = fc.oneof(
  { weight: 8, arbitrary: scalarArb },
  { weight: 1, arbitrary: fc.array(scalarArb, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(keyArb, scalarArb, { maxKeys: 3 }) },
);

/** A number for a field that holds one, at or beyond a limit. */
export const numberArb: fc.Arbitrary<Hostile> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NUMBERS) },
  { weight: 2, arbitrary: fc.constantFrom(...RAW_NUMBER_TEXTS).map((t) => new RawText(t)) },
  { weight: 1, arbitrary: fc.integer().map((n) => n) },
);
