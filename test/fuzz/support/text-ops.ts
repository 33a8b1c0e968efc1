import fc from 'fast-check';
import { RAW_NUMBER_TEXTS, UNICODE } from './values.js';

/** Mutations of a file's text: what an editor, a cut download or a hostile author can do to it. */
export type TextOp =
  | { op: 'truncate'; frac: number }
  | { op: 'tab'; line: number }
  | { op: 'dupLine'; line: number }
  | { op: 'dropLine'; line: number }
  | { op: 'swapLines'; a: number; b: number }
  | { op: 'insert'; at: number; text: string }
  | { op: 'append'; text: string }
  | { op: 'encoding'; kind: 'crlf' | 'cr' | 'bom' | 'nul' | 'surrogate' | 'bytes' | 'empty' };

export type Format = 'yaml' | 'jsonl' | 'json';

/** Stands for bytes that are not UTF-8 (0xFF 0xFE) until the text is written with toBytes. */
export const INVALID_UTF8 = '\uE0FF';

export function toBytes(text: string): Buffer {
  const parts = text.split(INVALID_UTF8);
  return Buffer.concat(parts.flatMap((p, i) => (i ? [Buffer.from([0xff, 0xfe]), Buffer.from(p)] : [Buffer.from(p)])));
}

const repeat = (s: string, n: number) => s.repeat(n);

/** Alias bombs (billion laughs) of a few levels, aliases to nothing and to their own ancestor, merge keys. */
export const yamlAliasArb: fc.Arbitrary<string> = fc.oneof(
  fc.integer({ min: 2, max: 9 }).map((levels) => {
    const lines = ['l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]'];
    for (let i = 1; i < levels; i++)
      lines.push(`l${i}: &l${i} [${Array.from({ length: 9 }, () => `*l${i - 1}`).join(', ')}]`);
    return `\nbomb:\n${lines.map((l) => `  ${l}`).join('\n')}\n`;
  }),
  fc.constant('\nundefined_alias: *nowhere\n'),
  fc.constant('\nself: &self [1, *self]\n'),
  fc.constant('\nbase: &base { n: 1 }\nmerged:\n  <<: *base\n  m: 2\n'),
  fc.constant('\nanchored: &a 1\n'),
  fc.constant('\nfirst: &a 1\nsecond: *a\n'),
);

const yamlSnippets = [
  '%YAML 1.1\n---\n',
  '\n---\nsecond: document\n',
  '\n...\n',
  '? [a, b]\n: c\n',
  '!!js/function "function(){}"',
  '!!binary aGk=',
  '!!set {a, b}',
  '!!python/object/apply:os.system ["true"]',
  '!custom x',
  '<<: *x\n',
  '__proto__: { polluted: true }\n',
  'constructor: { prototype: { polluted: true } }\n',
  '&',
  '*',
  '|',
  '>',
  '- ',
  ': ',
  '{',
  '}',
  '[',
  ']',
  '"',
  "'",
  '#',
  '@',
  '`',
  '\t',
  ' \t\n',
  '\\',
  '%',
];
const jsonSnippets = [
  '{',
  '}',
  '[',
  ']',
  '"',
  ',',
  ':',
  '\\',
  'NaN',
  'Infinity',
  'undefined',
  '/* c */',
  '// c',
  '\u0000',
  '{"__proto__": {"polluted": true}}',
  '{"id": "dup", "id": "dup2", "prompt": "p"}',
  '{"id": "big", "prompt": "p", "reference": 1e999}',
  '{"id": "neg0", "prompt": "p", "reference": -0}',
  '{"id": "long", "prompt": "p", "reference": 123456789012345678901234567890}',
  '{"id": "n", "prompt": "p", "metadata": {"tolerance": -1}}',
];

function deepText(format: Format, depth: number, list: boolean): string {
  if (format === 'yaml')
    return list
      ? `\ndeep: ${repeat('[', depth)}1${repeat(']', depth)}\n`
      : `\ndeep:\n${Array.from({ length: Math.min(depth, 3000) }, (_, i) => `${repeat(' ', i + 1)}k:`).join('\n')} 1\n`;
  const open = list ? '[' : '{"a":';
  const close = list ? ']' : '}';
  return `\n{"id": "deep", "prompt": "p", "metadata": {"x": ${repeat(open, depth)}1${repeat(close, depth)}}}\n`;
}

export function textOpArb(format: Format): fc.Arbitrary<TextOp> {
  const at = fc.nat({ max: 10_000 });
  const snippet = fc.oneof(
    fc.constantFrom(...(format === 'yaml' ? yamlSnippets : jsonSnippets)),
    fc.constantFrom(...UNICODE, ...RAW_NUMBER_TEXTS),
    fc.string({ unit: 'binary', maxLength: 6 }),
  );
  const appended = fc.oneof(
    ...(format === 'yaml' ? [yamlAliasArb] : []),
    fc
      .record({ depth: fc.constantFrom(63, 64, 65, 257, 5000, 50_000), list: fc.boolean() })
      .map(({ depth, list }) => deepText(format, depth, list)),
    snippet.map((s) => `\n${s}\n`),
  );
  return fc.oneof(
    {
      weight: 2,
      arbitrary: fc.record({ op: fc.constant('truncate' as const), frac: fc.double({ min: 0, max: 1, noNaN: true }) }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('tab' as const), line: at }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('dupLine' as const), line: at }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('dropLine' as const), line: at }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('swapLines' as const), a: at, b: at }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('insert' as const), at, text: snippet }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('append' as const), text: appended }) },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constant('encoding' as const),
        kind: fc.constantFrom('crlf', 'cr', 'bom', 'nul', 'surrogate', 'bytes', 'empty'),
      }),
    },
  );
}

export function applyTextOp(text: string, op: TextOp): string {
  const lines = text.split('\n');
  const li = (n: number) => n % Math.max(1, lines.length);
  switch (op.op) {
    case 'truncate':
      return text.slice(0, Math.floor(text.length * op.frac));
    case 'tab':
      lines[li(op.line)] = lines[li(op.line)]!.replace(/^ +/, '\t');
      return lines.join('\n');
    case 'dupLine':
      lines.splice(li(op.line), 0, lines[li(op.line)]!);
      return lines.join('\n');
    case 'dropLine':
      lines.splice(li(op.line), 1);
      return lines.join('\n');
    case 'swapLines': {
      const [a, b] = [li(op.a), li(op.b)];
      [lines[a], lines[b]] = [lines[b]!, lines[a]!];
      return lines.join('\n');
    }
    case 'insert': {
      const pos = text.length ? op.at % (text.length + 1) : 0;
      return text.slice(0, pos) + op.text + text.slice(pos);
    }
    case 'append':
      return text + op.text;
    case 'encoding':
      switch (op.kind) {
        case 'crlf':
          return text.replace(/\n/g, '\r\n');
        case 'cr':
          return text.replace(/\n/g, '\r');
        case 'bom':
          return `\ufeff${text}`;
        case 'nul':
          return `${text.slice(0, text.length >> 1)}\u0000${text.slice(text.length >> 1)}`;
        case 'surrogate':
          return `${text.slice(0, text.length >> 1)}\ud800${text.slice(text.length >> 1)}`;
        case 'bytes':
          return `${text.slice(0, text.length >> 1)}${INVALID_UTF8}${text.slice(text.length >> 1)}`;
        case 'empty':
          return '';
      }
  }
}
