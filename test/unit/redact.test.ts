import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/load.js';
import { Redactor } from '../../src/store/redact.js';
import { Rng } from '../../src/tasks/prng.js';
import { configIn } from '../helpers.js';

describe('Redactor', () => {
  const r = Redactor.fromSettings(
    { envNames: ['KEY', 'UNSET', 'SHORT'], patterns: ['acct-\\d+'], builtinPatterns: true },
    { KEY: 'pa"ss\\word-123', SHORT: 'ab' },
  );

  it('scrubs env secrets, user patterns and built-in key formats', () => {
    expect(
      r.scrub('key=pa"ss\\word-123 acct-99 sk-abcdefghijklmnopqrstuv hf_abcdefghijklmnopqrstuvwxyz0123456789'),
    ).toBe('key=[REDACTED] [REDACTED] [REDACTED] [REDACTED]');
    expect(r.scrub('ab is too short to be treated as a secret')).toBe('ab is too short to be treated as a secret');
  });

  it('scrubs secrets inside JSON even when JSON escaping changes their spelling', () => {
    const json = r.json({ msg: 'token pa"ss\\word-123 here', list: ['acct-7'] });
    expect(JSON.parse(json)).toEqual({ msg: 'token [REDACTED] here', list: ['[REDACTED]'] });
  });

  it('keeps JSON valid when a pattern would match across JSON syntax', () => {
    const greedy = new Redactor([], ['secret.*end']);
    const json = greedy.json({ a: 'secret "x" end', b: 'secret', c: 'end' });
    expect(JSON.parse(json)).toEqual({ a: '[REDACTED]', b: 'secret', c: 'end' });
  });

  it('is a no-op without secrets or patterns', () => {
    const none = Redactor.none();
    expect(none.active).toBe(false);
    expect(none.json({ a: 'sk-abcdefghijklmnopqrstuv' })).toBe('{"a":"sk-abcdefghijklmnopqrstuv"}');
  });
});

describe('Redactor: what the text is, after its escapes are decoded, not only its spelling', () => {
  const KEY = 'sk-abcdefghijklmnopqrstuv';
  const settings = { envNames: ['KEY'], patterns: ['acct-\\d+'], builtinPatterns: true };
  const r = Redactor.fromSettings(settings, { KEY: 'hunter2-secret' });

  it.each([
    ['a JSON \\u escape', String.raw`\u0073k-abcdefghijklmnopqrstuv`],
    ['every character escaped', [...KEY].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')],
    ['an escape escaped again', String.raw`\\u0073k-abcdefghijklmnopqrstuv`],
    ['a \\x escape', String.raw`\x73k-abcdefghijklmnopqrstuv`],
    ['a \\u{} escape', String.raw`\u{73}k-abcdefghijklmnopqrstuv`],
    ['an escaped secret from the environment', String.raw`hunter2\u002Dsecret`],
    ['a user pattern spelled with an escape', String.raw`acct\u002d42`],
  ])('%s is redacted as the plain spelling next to it is', (_name, escaped) => {
    expect(r.scrub(`plain ${KEY} escaped ${escaped} end`)).toBe('plain [REDACTED] escaped [REDACTED] end');
    expect(JSON.parse(r.json({ prompt: `plain ${KEY} escaped ${escaped}` }))).toEqual({
      prompt: 'plain [REDACTED] escaped [REDACTED]',
    });
  });

  it('finds a key that an escape glues to a word (\\nsk-…), and leaves escapes without a secret alone', () => {
    expect(r.scrub(String.raw`line\nsk-abcdefghijklmnopqrstuv`)).toBe(String.raw`line\n[REDACTED]`);
    const clean = String.raw`C:\new\table \u00e9t\u00e9 \x41 \u{1F600} \"quoted\" \\ \u12`;
    expect(r.scrub(clean)).toBe(clean);
  });
});

describe('Redactor on stored JSON: strings only, never the syntax', () => {
  it('leaves numbers alone, however a pattern or an all-digit secret matches their digits', () => {
    const r = new Redactor(['4242'], [String.raw`\d{13,16}`]);
    const value = {
      latency_ms: 1234567890123.5,
      usage: { prompt_tokens: 4242 },
      card: 'paid with 4111111111111111',
      pin: 'pin 4242',
    };
    const json = r.json(value);
    expect(JSON.parse(json)).toEqual({
      latency_ms: 1234567890123.5,
      usage: { prompt_tokens: 4242 },
      card: 'paid with [REDACTED]',
      pin: 'pin [REDACTED]',
    });
    expect(JSON.parse(r.jsonText(JSON.stringify(value), value))).toEqual(JSON.parse(json));
    expect(JSON.parse(r.stringify({ startedAt: 4242, note: '4242' }, 2))).toEqual({
      startedAt: 4242,
      note: '[REDACTED]',
    });
  });

  it("keeps the producer's JSON text when nothing matches, and finds secrets the text would hide", () => {
    const r = new Redactor([], [String.raw`^\d{16}$`, String.raw`a\nb`]);
    const clean = { a: 'nothing here', n: [1, 2] };
    const text = JSON.stringify(clean);
    expect(r.jsonText(text, clean)).toBe(text);
    // Anchors and escaped characters match the value, not its JSON spelling.
    const secret = { card: '4111111111111111', note: 'a\nb' };
    expect(JSON.parse(r.jsonText(JSON.stringify(secret), secret))).toEqual({ card: '[REDACTED]', note: '[REDACTED]' });
  });

  it('applies user patterns one by one: backreferences and group names keep their meaning', () => {
    const r = new Redactor([], ['(a)\\1', '(b)\\1', '(?<x>c)d', '(?<x>e)f']);
    expect(r.scrub('aa bb ab cd ef')).toBe('[REDACTED] [REDACTED] ab [REDACTED] [REDACTED]');
    // Overlapping matches of different patterns resolve leftmost-first, as one alternation would.
    expect(new Redactor([], ['b+c', 'ab']).scrub('xabcc')).toBe('x[REDACTED]cc');
  });

  it('skips empty matches instead of redacting between characters', () => {
    const r = new Redactor([], ['x*', '\\b']);
    expect(r.scrub('abc xx d')).toBe('abc [REDACTED] d');
    expect(JSON.parse(r.json({ a: 'abc', n: 1 }))).toEqual({ a: 'abc', n: 1 });
  });

  it('scrubs secrets in object keys without merging keys', () => {
    const r = new Redactor(['hunter2-secret', 'other-secret'], []);
    const json = r.json({
      'hunter2-secret': 1,
      'other-secret': 2,
      '[REDACTED]': 3,
      nested: [{ 'key hunter2-secret': 'v' }],
      __proto__x: 0,
    });
    expect(JSON.parse(json)).toEqual({
      '[REDACTED] (2)': 1,
      '[REDACTED] (3)': 2,
      '[REDACTED]': 3,
      nested: [{ 'key [REDACTED]': 'v' }],
      __proto__x: 0,
    });
  });

  it('fuzz: random patterns over random values always give parsable JSON with the same structure', () => {
    const rng = Rng.fromKey('redact-fuzz');
    const pick = <T>(xs: readonly T[]): T => xs[rng.int(0, xs.length - 1)]!;
    const atoms = [
      '\\d',
      '\\d{2,5}',
      '[0-9]+',
      '[a-z]+',
      '.',
      '.*',
      '.+?',
      'a|1',
      '(x)\\1',
      '\\b',
      '"',
      '\\\\',
      ':',
      ',',
      '\\{',
      '\\}',
      '\\[',
      '\\]',
      'null',
      'true',
      'e',
      '-',
      '\\.',
      '\\s',
      '[^"]*',
      '(?=a)',
      '(?<=1)',
      '^',
      '$',
      '\\w+',
      'REDACTED',
      'u00',
      '\\n',
      '(?<g>1)',
      '[-+]?\\d+(\\.\\d+)?',
    ];
    const quant = ['', '', '*', '+', '?', '{2}'];
    const chars = [
      'a',
      'b',
      'x',
      '1',
      '2',
      '0',
      '9',
      '"',
      '\\',
      ':',
      ',',
      '{',
      '}',
      '[',
      ']',
      ' ',
      '\n',
      'é',
      '💥',
      '-',
      '.',
      'e',
      '\u2028',
      'null',
    ];
    const str = () => Array.from({ length: rng.int(0, 12) }, () => pick(chars)).join('');
    const value = (depth: number): unknown => {
      const kind = rng.int(0, depth > 3 ? 3 : 5);
      if (kind === 0) return str();
      if (kind === 1) return pick([0, -1, 1.5e-7, 1234567890123456, 4111111111111111, 12.000001, -0.5, 1e21, 42]);
      if (kind === 2) return pick([true, false, null]);
      if (kind === 3) return str();
      if (kind === 4) return Array.from({ length: rng.int(0, 4) }, () => value(depth + 1));
      return Object.fromEntries(Array.from({ length: rng.int(0, 4) }, () => [str(), value(depth + 1)]));
    };
    const shape = (v: unknown): unknown =>
      typeof v === 'string'
        ? 'S'
        : Array.isArray(v)
          ? v.map(shape)
          : v && typeof v === 'object'
            ? Object.values(v).map(shape)
            : v;
    let redactedSomething = 0;
    for (let i = 0; i < 400; i++) {
      const patterns = Array.from({ length: rng.int(1, 3) }, () =>
        Array.from({ length: rng.int(1, 3) }, () => pick(atoms) + pick(quant)).join(''),
      ).filter((p) => {
        try {
          new RegExp(p);
          return true;
        } catch {
          return false;
        }
      });
      const r = new Redactor(rng.int(0, 1) ? [str() + '1234'] : [], patterns);
      const v = { [str()]: value(0), list: [value(1), str()] };
      const text = JSON.stringify(v);
      for (const out of [r.json(v), r.jsonText(text, v), r.stringify(v, 2)]) {
        let parsed: unknown;
        expect(() => (parsed = JSON.parse(out)), `${JSON.stringify(patterns)} on ${text} gave ${out}`).not.toThrow();
        expect(shape(parsed), `${JSON.stringify(patterns)} on ${text}`).toEqual(shape(v));
        if (out !== text && out.includes('REDACTED')) redactedSomething++;
      }
    }
    expect(redactedSomething).toBeGreaterThan(100);
  });
});

describe('privacy.redact_patterns in the config', () => {
  const issuesOf = (yaml: string): string[] => {
    try {
      configIn(yaml);
    } catch (err) {
      if (err instanceof ConfigError) return err.issues;
      throw err;
    }
    return [];
  };

  it('rejects invalid patterns and patterns that match the empty string, naming path and line', () => {
    const issues = issuesOf(
      'privacy:\n  redact_patterns:\n    - "acct-\\\\d+"\n    - "\\\\d*"\n    - "(unclosed"\n    - "\\\\b"\n    - "(?=sk-)"\n',
    );
    expect(issues).toEqual([
      expect.stringMatching(/^privacy\.redact_patterns\[1\]: matches the empty string.* \(massgen-rl\.yaml:4:7\)$/),
      expect.stringMatching(
        /^privacy\.redact_patterns\[2\]: not a valid regular expression: .* \(massgen-rl\.yaml:5:7\)$/,
      ),
      expect.stringMatching(
        /^privacy\.redact_patterns\[3\]: matches the empty string \(in "a"\).* \(massgen-rl\.yaml:6:7\)$/,
      ),
      expect.stringMatching(
        /^privacy\.redact_patterns\[4\]: matches the empty string \(in ".*sk-.*"\).* \(massgen-rl\.yaml:7:7\)$/,
      ),
    ]);
  });

  it('accepts patterns that are valid alone, even ones that could not share one alternation', () => {
    expect(
      issuesOf('privacy:\n  redact_patterns: ["(?<id>x)\\\\k<id>", "(?<id>y)\\\\k<id>", "(a)\\\\1", "\\\\d{13,16}"]\n'),
    ).toEqual([]);
  });
});

describe('Redactor and frozen constants', () => {
  it('remembers a clean object only when nothing in it can change', () => {
    const r = new Redactor(['hunter2-secret'], []);
    const inner = { text: 'clean' };
    const shallow = Object.freeze({ inner });
    expect(r.jsonText(JSON.stringify(shallow), shallow)).toBe('{"inner":{"text":"clean"}}');
    inner.text = 'now hunter2-secret';
    expect(JSON.parse(r.jsonText(JSON.stringify(shallow), shallow))).toEqual({ inner: { text: 'now [REDACTED]' } });
    const deep = Object.freeze({ inner: Object.freeze({ text: 'clean' }), list: Object.freeze(['a']) });
    expect(r.jsonText(JSON.stringify(deep), deep)).toBe(JSON.stringify(deep));
  });
});
