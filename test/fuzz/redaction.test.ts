import fc from 'fast-check';
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { exportRollouts, Redactor, Store } from '../../src/store/index.js';
import { storeDb } from '../../src/store/store.js';
import { tempDir } from '../helpers.js';
import { SETTINGS } from './support/settings.js';

/**
 * Property tests of redaction (test/unit/redact.test.ts checks that random patterns keep JSON parsable
 * and its shape). Here: secrets with characters JSON escapes, and key formats, planted anywhere in random
 * JSON (keys included) never survive; each string comes out as scrub() makes it and every number, boolean
 * and null as it was; and through a real store, what is stored and exported parses and holds no secret.
 */

// No capitals, brackets or spaces: a secret can then never be re-formed around an inserted "[REDACTED]".
const SECRET_CHARS = 'abcfghijkmnopqsuvwxyz0123456789-_."\\\n\té💥/:{}'.split('');
const secretArb = fc.oneof(
  fc.array(fc.constantFrom(...SECRET_CHARS), { minLength: 4, maxLength: 14 }).map((cs) => cs.join('')),
  fc.integer({ min: 1000, max: 99_999_999 }).map(String), // all digits, as a PIN or an account number
);
const TOKENS = [
  'sk-abcdefghijklmnopqrstuvwxyz012345',
  'Bearer abcdefghijklmnopqrstu.vwxyz',
  'hf_abcdefghijklmnopqrstuvwxyz0123456789',
  'AKIAABCDEFGHIJKLMNOP',
  'ghp_abcdefghijklmnopqrstuvwxyz0123456789',
];
const PATTERNS = ['acct-\\d+', '\\d{13,16}', 'pin=\\w+', '(x)\\1y', '(?<t>q)\\k<t>z'];

interface Planted {
  secrets: string[];
  patterns: string[];
  builtin: boolean;
  value: unknown;
}

/** Random JSON in which strings and keys have secrets, key-format tokens and pattern matches planted. */
const plantedArb: fc.Arbitrary<Planted> = fc
  .record({
    secrets: fc.array(secretArb, { minLength: 1, maxLength: 3 }),
    patterns: fc.subarray(PATTERNS),
    builtin: fc.boolean(),
    seedValue: fc.jsonValue({ maxDepth: 4 }),
    plants: fc.array(fc.tuple(fc.nat(), fc.nat(), fc.constantFrom('secret', 'token', 'pattern')), { maxLength: 12 }),
  })
  .map(({ secrets, patterns, builtin, seedValue, plants }) => {
    let n = 0;
    const plantIn = (s: string): string => {
      for (const [which, pos, kind] of plants) {
        if (n++ % 3) continue;
        const text =
          kind === 'secret'
            ? secrets[which % secrets.length]!
            : kind === 'token'
              ? TOKENS[which % TOKENS.length]!
              : ['acct-42', '4111111111111111', 'pin=1234', 'xxy', 'qqz'][which % 5]!;
        const at = pos % (s.length + 1);
        s = `${s.slice(0, at)} ${text} ${s.slice(at)}`;
      }
      return s;
    };
    const walk = (v: unknown): unknown => {
      if (typeof v === 'string') return plantIn(v);
      if (Array.isArray(v)) return [...v.map(walk), plantIn('')];
      if (v && typeof v === 'object') {
        const out: Record<string, unknown> = {};
        for (const [k, x] of Object.entries(v))
          Object.defineProperty(out, plantIn(k), {
            value: walk(x),
            enumerable: true,
            writable: true,
            configurable: true,
          });
        return out;
      }
      return v;
    };
    return { secrets, patterns, builtin, value: { planted: plantIn('top'), data: walk(seedValue) } };
  });

const redactorFor = (p: Planted) =>
  Redactor.fromSettings(
    { envNames: p.secrets.map((_, i) => `S${i}`), patterns: p.patterns, builtinPatterns: p.builtin },
    Object.fromEntries(p.secrets.map((s, i) => [`S${i}`, s])),
  );

/** Every string (keys included) of a parsed JSON value. */
function strings(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) strings(x, out);
  else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      out.push(k);
      strings(x, out);
    }
  }
  return out;
}

/** What survives of a planted secret or token in a stored string. */
function survivors(p: Planted, texts: string[]): string[] {
  const secrets = [...p.secrets.filter((s) => s.length >= 4), ...(p.builtin ? TOKENS : [])];
  return texts.flatMap((t) =>
    secrets.filter((s) => t.includes(s)).map((s) => `${JSON.stringify(s)} in ${JSON.stringify(t)}`),
  );
}

/** Strings are scrubbed one by one; numbers, booleans, null, order and keys without a secret are untouched. */
function sameApartFromStrings(r: Redactor, before: unknown, after: unknown, at = '$'): string | null {
  if (typeof before === 'string')
    return after === r.scrub(before) ? null : `${at}: ${JSON.stringify(after)} is not scrub(${JSON.stringify(before)})`;
  if (Array.isArray(before)) {
    if (!Array.isArray(after) || after.length !== before.length) return `${at}: not the same list`;
    for (let i = 0; i < before.length; i++) {
      const d = sameApartFromStrings(r, before[i], after[i], `${at}[${i}]`);
      if (d) return d;
    }
    return null;
  }
  if (before && typeof before === 'object') {
    const b = Object.entries(before);
    const a = after && typeof after === 'object' ? Object.entries(after) : [];
    if (a.length !== b.length) return `${at}: ${b.length} keys became ${a.length}`;
    for (let i = 0; i < b.length; i++) {
      const [bk, bv] = b[i]!;
      const [ak, av] = a[i]!;
      const key = r.scrub(bk);
      if (key === bk ? ak !== bk : !ak.startsWith(key))
        return `${at}: key ${JSON.stringify(bk)} became ${JSON.stringify(ak)}`;
      const d = sameApartFromStrings(r, bv, av, `${at}.${bk}`);
      if (d) return d;
    }
    return null;
  }
  return before === after ? null : `${at}: ${JSON.stringify(before)} became ${JSON.stringify(after)}`;
}

/** A secret or key format with some characters escaped (\uXXXX, \xXX or \u{X}), the result perhaps escaped again. */
const escapedArb = fc
  .record({
    secret: secretArb.filter((x) => !x.includes('\\')),
    token: fc.constantFrom(...TOKENS),
    useToken: fc.boolean(),
    escapes: fc.array(fc.tuple(fc.nat(), fc.constantFrom('u', 'x', 'braces')), { minLength: 1, maxLength: 6 }),
    twice: fc.boolean(),
    before: fc.string({ maxLength: 8 }),
    after: fc.string({ maxLength: 8 }),
  })
  .map(({ secret, token, useToken, escapes, twice, before, after }) => {
    const plain = useToken ? token : secret;
    const chars = [...plain];
    for (const [at, style] of escapes) {
      const i = at % chars.length;
      if (chars[i]!.startsWith('\\')) continue;
      const code = chars[i]!.codePointAt(0)!;
      const hex = code.toString(16);
      if (style === 'u' && code <= 0xffff) chars[i] = `\\u${hex.padStart(4, '0')}`;
      else chars[i] = style === 'x' && code <= 0xff ? `\\x${hex.padStart(2, '0')}` : `\\u{${hex}}`;
    }
    const spelled = chars.join('');
    return { plain, secret, text: `${before} ${twice ? spelled.replaceAll('\\', '\\\\') : spelled} ${after}` };
  });

/** Every \uXXXX, \xXX and \u{X} escape (and \\) decoded, again and again until none is left. */
const ESCAPES = /\\u\{([0-9a-f]{1,6})\}|\\u([0-9a-f]{4})|\\x([0-9a-f]{2})|\\\\/gi;
function decodeAll(text: string): string {
  for (;;) {
    const next = text.replace(ESCAPES, (_m, b?: string, u?: string, x?: string) => {
      const hex = b ?? u ?? x;
      return hex === undefined ? '\\' : String.fromCodePoint(parseInt(hex, 16));
    });
    if (next === text) return text;
    text = next;
  }
}

const runs = (n: number) => ({ seed: SETTINGS.seed, numRuns: Math.max(n, Math.round((n * SETTINGS.cases) / 300)) });

describe('property: redaction over random JSON with planted secrets', () => {
  it('json, jsonText and stringify parse, keep every non-string as it was, and let no secret through', () => {
    fc.assert(
      fc.property(plantedArb, (p) => {
        const r = redactorFor(p);
        const text = JSON.stringify(p.value);
        for (const out of [r.json(p.value), r.jsonText(text, p.value), r.stringify(p.value, 2)]) {
          const parsed = JSON.parse(out) as unknown;
          expect(survivors(p, strings(parsed))).toEqual([]);
          expect(sameApartFromStrings(r, JSON.parse(text), parsed)).toBeNull();
        }
      }),
      runs(500),
    );
  });

  it('a secret or key format spelled with escapes (once or twice) is redacted as what it decodes to', () => {
    fc.assert(
      fc.property(escapedArb, fc.boolean(), ({ plain, secret, text }, builtin) => {
        const settings = { envNames: ['S'], patterns: [], builtinPatterns: builtin || plain !== secret };
        const r = Redactor.fromSettings(settings, { S: secret });
        for (const out of [r.scrub(text), (JSON.parse(r.json({ text })) as { text: string }).text]) {
          expect(decodeAll(out), `${JSON.stringify(text)} gave ${JSON.stringify(out)}`).not.toContain(plain);
        }
      }),
      runs(500),
    );
  });

  it('what a store holds and exports parses and holds no secret', async () => {
    const dir = tempDir();
    let i = 0;
    await fc.assert(
      fc.asyncProperty(plantedArb, async (p) => {
        const store = Store.open({ path: path.join(dir, `store-${i++}.sqlite`), redactor: redactorFor(p) });
        try {
          const id = store.rollouts.start({ source: 'fuzz', metadata: { planted: p.value } });
          store.spans.append(id, [
            { type: 'message', name: 'context', payload: p.value },
            { type: 'message', name: 'text', payloadJson: JSON.stringify(p.value), payload: p.value },
          ]);
          const answer = (p.value as { planted: string }).planted;
          store.rollouts.finish(id, { status: 'completed', finalAnswer: answer, error: null });
          const json = storeDb(store)
            .prepare('SELECT payload FROM spans UNION ALL SELECT metadata FROM rollouts')
            .pluck()
            .all() as string[];
          let exported = '';
          await exportRollouts(
            store,
            new Writable({
              write: (chunk, _enc, done) => {
                exported += String(chunk);
                done();
              },
            }),
          );
          for (const text of [...json, ...exported.trim().split('\n')])
            expect(survivors(p, strings(JSON.parse(text)))).toEqual([]);
          const stored = storeDb(store).prepare('SELECT final_answer FROM rollouts').pluck().get() as string;
          expect(stored).toBe(store.redactor.scrub(answer));
          expect(survivors(p, [stored])).toEqual([]);
          for (const span of store.spans.list(id))
            expect(sameApartFromStrings(store.redactor, JSON.parse(JSON.stringify(p.value)), span.payload)).toBeNull();
        } finally {
          store.close();
        }
      }),
      runs(40),
    );
    expect(fs.readdirSync(dir).length).toBeGreaterThan(0);
  });
});
