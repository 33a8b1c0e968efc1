import { describe, expect, it } from 'vitest';
import { BUILTIN_SUITES } from '../../src/config/schema.js';
import { UserError } from '../../src/errors.js';
import { getSuite, Rng, SUITES, suiteNames, type Task } from '../../src/tasks/index.js';
import { STRING_ORACLE } from '../support/string-oracle.js';

const SAMPLE = 400;
/** The original tasks (level 2). */
const generate = (name: string, n = SAMPLE, seed = 1) => getSuite(name).generate(n, seed, { difficulty: 2 });
const numbersIn = (text: string) => (text.match(/-?\d+(\.\d+)?/g) ?? []).map(Number);
const md = (t: Task) => t.metadata as Record<string, any>;

describe('Rng (mulberry32)', () => {
  it('gives the same sequence for a seed on every run and machine', () => {
    const r = new Rng(42);
    expect([r.next(), r.next(), r.next()]).toEqual([0.6011037519201636, 0.44829055899754167, 0.8524657934904099]);
    const k = Rng.fromKey('arithmetic:1:0');
    expect([k.int(1, 100), k.int(1, 100), k.int(1, 100)]).toEqual([70, 96, 23]);
  });

  it('keeps ints in range and samples distinct items', () => {
    const r = new Rng(7);
    const ints = Array.from({ length: 2000 }, () => r.int(-3, 3));
    expect(new Set(ints)).toEqual(new Set([-3, -2, -1, 0, 1, 2, 3]));
    expect([...r.sample([1, 2, 3, 4, 5], 5)].sort()).toEqual([1, 2, 3, 4, 5]);
  });
});

describe('suite registry', () => {
  it('has exactly the suites the config accepts, each with one shape', () => {
    expect(suiteNames().sort()).toEqual([...BUILTIN_SUITES].sort());
    for (const [name, suite] of Object.entries(SUITES)) {
      expect(suite.name).toBe(name);
      expect(suite.describe.length).toBeGreaterThan(10);
    }
  });

  it('names the valid suites for an unknown one', () => {
    expect(() => getSuite('algebra')).toThrow(UserError);
    expect(() => getSuite('algebra')).toThrow(
      'unknown task suite "algebra"; built-in suites: arithmetic, unit_conversion, string_transform, multi_step',
    );
    expect(() => getSuite('toString')).toThrow(/unknown task suite "toString"/);
  });
});

describe.each(BUILTIN_SUITES)('suite %s', (name) => {
  const tasks = generate(name);

  it('is deterministic, prefix-stable, and differs between seeds', () => {
    expect(generate(name)).toEqual(tasks);
    expect(generate(name, 25)).toEqual(tasks.slice(0, 25));
    const other = generate(name, 25, 2);
    expect(other.map((t) => t.prompt)).not.toEqual(tasks.slice(0, 25).map((t) => t.prompt));
    expect(generate(name, 3, -5).map((t) => t.id)).toEqual([0, 1, 2].map((i) => `suite:${name}:-5:${i}`));
    expect(generate(name, 0)).toEqual([]);
  });

  it('gives unique ids, the suite source and well-formed tasks', () => {
    expect(new Set(tasks.map((t) => t.id)).size).toBe(tasks.length);
    tasks.forEach((t, i) => {
      expect(t.id).toBe(`suite:${name}:1:${i}`);
      expect(t.source).toBe(`suite:${name}`);
      expect(t.category).toBe(`${name}/${md(t).kind}`);
      expect(t.prompt).toMatch(/Give your final answer as .+\.$/);
      expect(t.reference).toMatch(/\S/);
      expect(['number', 'string']).toContain(md(t).answer_type);
      if (md(t).answer_type === 'number') {
        expect(Number.isFinite(Number(t.reference))).toBe(true);
        expect(md(t).tolerance).toBeGreaterThanOrEqual(0);
      }
    });
  });

  it('covers every sub-kind in a few hundred tasks', () => {
    expect(new Set(tasks.map((t) => md(t).kind)).size).toBe(EXPECTED_KINDS[name]);
  });
});

const EXPECTED_KINDS: Record<string, number> = {
  arithmetic: 4,
  unit_conversion: 5,
  string_transform: 9,
  multi_step: 7,
};

describe('references, recomputed independently', () => {
  it('arithmetic', () => {
    for (const t of generate('arithmetic')) {
      const {
        operation,
        operands: [a, b],
      } = md(t);
      const expected = { add: a + b, subtract: a - b, multiply: a * b, divide: a / b }[operation as string];
      expect(Number.isInteger(expected) && expected > 0).toBe(true);
      expect(t.reference).toBe(String(expected));
      expect(numbersIn(t.prompt).sort()).toEqual([a, b].sort());
      expect(Math.max(a, b)).toBeLessThan(200);
    }
  });

  it('unit_conversion, rounded as the prompt states', () => {
    const toBase: Record<string, number> = {
      mm: 1e-3,
      cm: 1e-2,
      m: 1,
      km: 1e3,
      in: 2.54e-2,
      ft: 0.3048,
      yd: 0.9144,
      mi: 1609.344,
      g: 1e-3,
      kg: 1,
      t: 1e3,
      lb: 0.45359237,
      oz: 0.45359237 / 16,
      s: 1,
      min: 60,
      h: 3600,
      day: 86400,
      week: 7 * 86400,
      mL: 1e-3,
      L: 1,
      gal: 231 * 0.0254 ** 3 * 1000,
      cup: (231 * 0.0254 ** 3 * 1000) / 16,
    };
    const kelvin = (v: number, u: string) => (u === 'K' ? v : u === 'C' ? v + 273.15 : ((v - 32) * 5) / 9 + 273.15);
    const fromKelvin = (k: number, u: string) => (u === 'K' ? k : u === 'C' ? k - 273.15 : ((k - 273.15) * 9) / 5 + 32);
    for (const t of generate('unit_conversion')) {
      const { dimension, from, to, value, decimals, tolerance } = md(t);
      const exact =
        dimension === 'temperature' ? fromKelvin(kelvin(value, from), to) : (value * toBase[from]!) / toBase[to]!;
      const ref = t.reference!;
      expect(ref.split('.')[1]?.length ?? 0).toBe(decimals);
      expect(Math.abs(Number(ref) - exact)).toBeLessThanOrEqual(0.5 * 10 ** -decimals + 1e-9);
      expect(tolerance).toBeCloseTo(0.5 * 10 ** -decimals, 12);
      expect(Math.abs(Number(ref))).toBeGreaterThan(0);
      expect(Math.abs(Number(ref))).toBeLessThan(100_000);
      expect(t.prompt).toContain(
        decimals === 0 ? 'Round to the nearest whole number.' : `Round to ${decimals} decimal place`,
      );
      expect(numbersIn(t.prompt)[0]).toBe(value);
    }
  });

  it('string_transform', () => {
    for (const t of generate('string_transform')) {
      const { operation, input, letter, answer_type } = md(t);
      // The original tasks use nine operations; the oracle also knows level 1's count_letters and last_letter.
      expect([
        'reverse',
        'uppercase',
        'count_vowels',
        'sort_letters',
        'remove_duplicates',
        'count_letter',
        'reverse_words',
        'acronym',
        'capitalize_words',
      ]).toContain(operation);
      expect(t.reference).toBe(STRING_ORACLE[operation]!(input, letter));
      expect(t.prompt).toContain(`"${input}"`);
      expect(input).toMatch(/^[a-z]+( [a-z]+){0,3}$/);
      expect(answer_type).toBe(['count_vowels', 'count_letter'].includes(operation) ? 'number' : 'string');
      if (operation === 'count_letter') expect(Number(t.reference)).toBeGreaterThan(0);
    }
  });

  it('multi_step', () => {
    const formulas: Record<string, (v: Record<string, number>) => number> = {
      shopping: (v) => v.bill! - (v.a! * v.p! + v.b! * v.q!),
      ages: (v) => 2 * v.age! + v.d! + 2 * v.k!,
      travel: (v) => v.s1! * v.h1! + v.s2! * v.h2!,
      printing: (v) => (v.copies! * v.pages!) / v.rate!,
      savings: (v) => v.saved! + v.weekly! * v.weeks! - v.spent!,
      discount: (v) => v.count! * v.price! * (1 - v.percent! / 100),
      baking: (v) => (v.batches! * v.perBatch! - v.eaten!) / v.boxes!,
    };
    for (const t of generate('multi_step')) {
      const { scenario, values, steps } = md(t);
      const expected = formulas[scenario]!(values);
      expect(Number.isInteger(expected) && expected > 0).toBe(true);
      expect(t.reference).toBe(String(expected));
      expect(steps).toBeGreaterThanOrEqual(2);
      expect(steps).toBeLessThanOrEqual(4);
      const shown = numbersIn(t.prompt);
      for (const v of Object.values(values as Record<string, number>)) expect(shown).toContain(v);
    }
  });
});
