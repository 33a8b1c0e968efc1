import { createHash } from 'node:crypto';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUILTIN_SUITES, configSchema } from '../../src/config/schema.js';
import { Store } from '../../src/store/index.js';
import { tasksForRun } from '../../src/tasks/for-run.js';
import { getSuite, SUITES, type Difficulty, type SplitTask, type Task } from '../../src/tasks/index.js';
import { ARITHMETIC_DEFAULT_LEVEL } from '../../src/tasks/suites/arithmetic.js';
import { MULTI_STEP_DEFAULT_LEVEL } from '../../src/tasks/suites/multi-step.js';
import { STRING_TRANSFORM_DEFAULT_LEVEL } from '../../src/tasks/suites/string-transform.js';
import { UNIT_CONVERSION_DEFAULT_LEVEL } from '../../src/tasks/suites/unit-conversion.js';
import { tempDir } from '../helpers.js';
import { STRING_ORACLE } from '../support/string-oracle.js';

const SAMPLE = 400;
const md = (t: Task) => t.metadata as Record<string, any>;
const numbersIn = (text: string) => (text.match(/-?\d+(\.\d+)?/g) ?? []).map(Number);
const at = (name: string, difficulty: Difficulty, n = SAMPLE, seed = 1) =>
  getSuite(name).generate(n, seed, { difficulty });

/**
 * Captured from the suites before levels existed: sha256 of JSON.stringify([...generate(300, 1), ...generate(50, 42)])
 * (ids, prompts, references, categories, metadata and sources), and a few tasks written out.
 */
const ORIGINAL: Record<string, { digest: string; tasks: [id: string, prompt: string, reference: string][] }> = {
  arithmetic: {
    digest: '351dd2f4493d1d269a6e191bd0b466933039ce5527551d4318d349a4ed65b92b',
    tasks: [
      [
        'suite:arithmetic:1:1',
        'Emma has 16 stickers. Ben gives Emma 27 more. How many stickers does Emma have now? Give your final answer as a single number.',
        '43',
      ],
      [
        'suite:arithmetic:1:17',
        'Maya reads 10 pages every day for 10 days. How many pages does Maya read in total? Give your final answer as a single number.',
        '100',
      ],
      [
        'suite:arithmetic:42:0',
        'A ribbon 50 centimeters long is cut into 10 pieces of equal length. How long is each piece, in centimeters? Give your final answer as a single number.',
        '5',
      ],
    ],
  },
  unit_conversion: {
    digest: 'add6297df047bfa868ac64aa8e28a99761aabe68696c811b40c21c94e3db81d7',
    tasks: [
      [
        'suite:unit_conversion:1:1',
        'A container holds 1.4 US cups. What is that in liters? Use 1 US cup = 236.5882365 milliliters. Round to 3 decimal places. Give your final answer as a single number.',
        '0.331',
      ],
      [
        'suite:unit_conversion:1:17',
        'How many kilograms are in 55.4 pounds? Use 1 pound = 0.45359237 kilograms. Round to 2 decimal places. Give your final answer as a single number.',
        '25.13',
      ],
      [
        'suite:unit_conversion:42:0',
        'Convert 1.1 days to minutes. Round to 1 decimal place. Give your final answer as a single number.',
        '1584.0',
      ],
    ],
  },
  string_transform: {
    digest: 'd803a5ab7f2df2ac50b61437e0d5053fb06abdb46f8b4933d2a701ac9c10529b',
    tasks: [
      [
        'suite:string_transform:1:1',
        'Reverse the order of the words in "stone coffee". Give your final answer as the resulting text only, without quotes.',
        'coffee stone',
      ],
      [
        'suite:string_transform:1:17',
        'Remove the repeated letters from "letter", keeping only the first occurrence of each letter in order. Give your final answer as the resulting text only, without quotes.',
        'letr',
      ],
      [
        'suite:string_transform:42:0',
        'Remove the repeated letters from "hammer", keeping only the first occurrence of each letter in order. Give your final answer as the resulting text only, without quotes.',
        'hamer',
      ],
    ],
  },
  multi_step: {
    digest: '200542fa978ae059d91025e6375642e38364661aac7057f85240d24e685e41ee',
    tasks: [
      [
        'suite:multi_step:1:1',
        'A train travels at 90 km/h for 4 hours, then at 45 km/h for 2 hours. How many kilometers does it travel in total? Give your final answer as a single number.',
        '450',
      ],
      [
        'suite:multi_step:1:17',
        'A printer prints 2 pages per minute. Priya needs 3 copies of a 12-page report. How many minutes will the printing take? Give your final answer as a single number.',
        '18',
      ],
      [
        'suite:multi_step:42:0',
        'Jamal bakes 3 batches of 12 cookies. 6 cookies are eaten, and the rest are packed equally into 3 boxes. How many cookies go in each box? Give your final answer as a single number.',
        '10',
      ],
    ],
  },
};

/** suite:arithmetic:1:0 as stored before levels existed. */
const STORED_BEFORE: SplitTask = {
  id: 'suite:arithmetic:1:0',
  prompt:
    'There are 12 boxes with 5 cards in each box. How many cards are there altogether? Give your final answer as a single number.',
  reference: '60',
  category: 'arithmetic/multiplication',
  metadata: {
    suite: 'arithmetic',
    seed: 1,
    index: 0,
    kind: 'multiplication',
    answer_type: 'number',
    tolerance: 0,
    operation: 'multiply',
    operands: [12, 5],
    template: 0,
  },
  source: 'suite:arithmetic',
  split: 'train',
};

describe.each(BUILTIN_SUITES)('suite %s, level 2', (name) => {
  it('generates exactly the original tasks, ids and metadata included', () => {
    const suite = getSuite(name);
    const tasks = [...suite.generate(300, 1, { difficulty: 2 }), ...suite.generate(50, 42, { difficulty: 2 })];
    expect(createHash('sha256').update(JSON.stringify(tasks)).digest('hex')).toBe(ORIGINAL[name]!.digest);
    for (const [id, prompt, reference] of ORIGINAL[name]!.tasks) {
      expect(tasks.find((t) => t.id === id)).toMatchObject({ prompt, reference });
    }
  });
});

it('a store holding an original task accepts it regenerated at level 2', () => {
  const store = Store.open({ path: path.join(tempDir(), 'store.sqlite') });
  store.tasks.upsertMany([STORED_BEFORE]);
  const [again] = getSuite('arithmetic').generate(1, 1, { difficulty: 2 });
  expect(store.tasks.conflicts([{ ...again!, split: 'eval' }])).toEqual([]);
  expect(store.tasks.upsertMany([{ ...again!, split: 'eval' }])).toEqual({ inserted: 0, updated: 1, unchanged: 0 });
  store.close();
});

describe('levels and defaults', () => {
  it("lists four levels per suite, each described, and defaults to the suite's named default level", () => {
    const defaults = {
      arithmetic: ARITHMETIC_DEFAULT_LEVEL,
      unit_conversion: UNIT_CONVERSION_DEFAULT_LEVEL,
      string_transform: STRING_TRANSFORM_DEFAULT_LEVEL,
      multi_step: MULTI_STEP_DEFAULT_LEVEL,
    };
    for (const [name, suite] of Object.entries(SUITES)) {
      expect(suite.levels.map((l) => l.level)).toEqual([0, 1, 2, 3]);
      for (const l of suite.levels) expect(l.describe.length).toBeGreaterThan(20);
      expect(new Set(suite.levels.map((l) => l.describe)).size).toBe(4);
      expect(suite.defaultLevel).toBe(defaults[name as keyof typeof defaults]);
      expect(suite.generate(5, 3)).toEqual(suite.generate(5, 3, { difficulty: suite.defaultLevel }));
    }
  });

  it('refuses a level that does not exist', () => {
    expect(() => getSuite('arithmetic').generate(1, 1, { difficulty: 4 as Difficulty })).toThrow(
      'suite arithmetic: difficulty must be 0, 1, 2 or 3, got 4',
    );
  });
});

describe.each(BUILTIN_SUITES.flatMap((name) => [0, 1, 3].map((level) => [name, level as Difficulty] as const)))(
  'suite %s, level %i',
  (name, level) => {
    const tasks = at(name, level);
    const templates = getSuite(name).templates(level);

    it('has its own ids, deterministic and prefix-stable per seed, different between seeds', () => {
      tasks.forEach((t, i) => expect(t.id).toBe(`suite:${name}@${level}:1:${i}`));
      expect(at(name, level)).toEqual(tasks);
      expect(at(name, level, 25)).toEqual(tasks.slice(0, 25));
      expect(at(name, level, 25, 2).map((t) => t.prompt)).not.toEqual(tasks.slice(0, 25).map((t) => t.prompt));
      const original = at(name, 2);
      const other = at(name, level === 1 ? 3 : 1);
      const easiest = at(name, level === 0 ? 1 : 0);
      const prompts = new Set(tasks.map((t) => t.prompt));
      expect(original.filter((t) => prompts.has(t.prompt)).length).toBeLessThan(SAMPLE / 20);
      expect(other.filter((t) => prompts.has(t.prompt)).length).toBeLessThan(SAMPLE / 20);
      expect(easiest.filter((t) => prompts.has(t.prompt)).length).toBeLessThan(SAMPLE / 20);
      const ids = new Set(tasks.map((t) => t.id));
      expect([...original, ...other, ...easiest].some((t) => ids.has(t.id))).toBe(false);
    });

    it('tags each task with its level and a template of its kind, and uses every template', () => {
      for (const t of tasks) {
        expect(t.source).toBe(`suite:${name}`);
        expect(t.category).toBe(`${name}/${md(t).kind}`);
        expect(md(t).difficulty).toBe(level);
        expect(t.prompt).toMatch(/Give your final answer as .+\.$/);
        expect(templates[md(t).kind]).toContain(String(md(t).template));
      }
      const used = new Set(tasks.map((t) => `${md(t).kind}/${md(t).template}`));
      expect([...used].sort()).toEqual(
        Object.entries(templates)
          .flatMap(([k, names]) => names.map((n) => `${k}/${n}`))
          .sort(),
      );
    });
  },
);

describe('every kind with more than one template names its template, at every level', () => {
  it.each(BUILTIN_SUITES)('%s', (name) => {
    for (const level of [0, 1, 2, 3] as const) {
      const templates = getSuite(name).templates(level);
      for (const t of at(name, level)) {
        if (templates[md(t).kind]!.length > 1) expect(templates[md(t).kind]).toContain(String(md(t).template));
        else expect(templates[md(t).kind]).toHaveLength(1);
      }
    }
  });
});

describe('level 0 answers, recomputed from metadata', () => {
  it('arithmetic: one +, − or × of single digits, as a bare expression', () => {
    for (const t of at('arithmetic', 0)) {
      const {
        operation,
        operands: [a, b],
      } = md(t);
      expect(t.reference).toBe(
        String(({ add: a + b, subtract: a - b, multiply: a * b } as Record<string, number>)[operation]),
      );
      expect(Number(t.reference)).toBeGreaterThan(0);
      expect(Math.max(a, b)).toBeLessThanOrEqual(9);
      expect(numbersIn(t.prompt).sort()).toEqual([a, b].sort());
    }
  });

  it('unit_conversion: 2–9 units times the factor the prompt states', () => {
    for (const t of at('unit_conversion', 0)) {
      const { from, to, value, factor } = md(t);
      expect(value).toBeGreaterThanOrEqual(2);
      expect(value).toBeLessThanOrEqual(9);
      expect(t.reference).toBe(String(value * factor));
      expect(t.prompt).toContain(`1 ${from} = ${factor} ${to}`);
    }
  });

  it('string_transform: the first or last letter of a short word, or the longer of two words', () => {
    for (const t of at('string_transform', 0)) {
      const { operation, input } = md(t);
      const words = String(input).split(' ');
      const expected = {
        first_letter: input[0],
        last_letter: input.at(-1),
        longer_word: [...words].sort((x, y) => y.length - x.length)[0],
      }[operation as string];
      expect(t.reference).toBe(expected);
      for (const w of words) expect(t.prompt).toContain(`"${w}"`);
      if (operation === 'longer_word') expect(words[0]!.length).not.toBe(words[1]!.length);
    }
  });

  it('multi_step: word problems of one or two additions or subtractions of small numbers', () => {
    const apply: Record<string, [steps: number, (v: Record<string, number>) => number]> = {
      gain_then_lose: [2, (v) => v.a! + v.b! - v.c!],
      together: [1, (v) => v.a! + v.b!],
      give_away: [1, (v) => v.a! - v.b!],
    };
    const tasks = at('multi_step', 0);
    expect(new Set(tasks.map((t) => md(t).scenario))).toEqual(new Set(Object.keys(apply)));
    for (const t of tasks) {
      const { scenario, values, steps } = md(t);
      const [expectedSteps, answer] = apply[scenario]!;
      expect(steps).toBe(expectedSteps);
      expect(t.reference).toBe(String(answer(values)));
      expect(Number(t.reference)).toBeGreaterThan(0);
      for (const v of Object.values(values as Record<string, number>)) expect(v).toBeLessThanOrEqual(9);
      for (const v of Object.values(values as Record<string, number>)) expect(numbersIn(t.prompt)).toContain(v);
    }
  });
});

describe('level 1 and 3 answers, recomputed from metadata', () => {
  it('arithmetic: single digits at level 1; 3-digit sums and differences, 2-digit × 1-digit at level 3', () => {
    const apply = (op: string, a: number, b: number) =>
      ({ add: a + b, subtract: a - b, multiply: a * b, divide: a / b })[op]!;
    for (const t of at('arithmetic', 1)) {
      const {
        operation,
        operands: [a, b],
      } = md(t);
      expect(t.reference).toBe(String(apply(operation, a, b)));
      expect(Number(t.reference)).toBeGreaterThan(0);
      expect(numbersIn(t.prompt).sort()).toEqual([a, b].sort());
      if (operation === 'divide') expect(a).toBeLessThanOrEqual(25);
      else expect(Math.max(a, b)).toBeLessThanOrEqual(9);
    }
    for (const t of at('arithmetic', 3)) {
      const {
        operation,
        operands: [a, b],
      } = md(t);
      const result = apply(operation, a, b);
      expect(Number.isInteger(result) && result > 0).toBe(true);
      expect(t.reference).toBe(String(result));
      if (operation === 'add' || operation === 'subtract') expect(Math.min(a, b)).toBeGreaterThanOrEqual(100);
      if (operation === 'multiply') expect([a >= 11 && a <= 99, b >= 3 && b <= 9]).toEqual([true, true]);
      if (operation === 'divide') expect(result).toBeGreaterThanOrEqual(11);
    }
  });

  it('unit_conversion: one stated metric step with a whole answer at level 1; two-step conversions at level 3', () => {
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
    for (const t of at('unit_conversion', 1)) {
      const { dimension, from, to, value, decimals, tolerance } = md(t);
      const ratio = Math.max(toBase[from]!, toBase[to]!) / Math.min(toBase[from]!, toBase[to]!);
      expect([10, 100, 1000]).toContain(Math.round(ratio));
      expect(['length', 'mass', 'volume']).toContain(dimension);
      expect(Number(t.reference)).toBe(Math.round((value * toBase[from]!) / toBase[to]!));
      expect(Math.abs(Number(t.reference) - (value * toBase[from]!) / toBase[to]!)).toBeLessThan(1e-9);
      expect(Math.min(value, Number(t.reference))).toBeLessThanOrEqual(9);
      expect([decimals, tolerance]).toEqual([0, 0.5]);
      expect(t.prompt).toContain(`= ${Math.round(ratio)} `);
    }
    const kelvin = (v: number, u: string) => (u === 'K' ? v : u === 'C' ? v + 273.15 : ((v - 32) * 5) / 9 + 273.15);
    const fromKelvin = (k: number, u: string) => (u === 'K' ? k : u === 'C' ? k - 273.15 : ((k - 273.15) * 9) / 5 + 32);
    const direct = new Set([
      'in>cm',
      'ft>m',
      'yd>m',
      'mi>km',
      'lb>kg',
      'oz>g',
      'gal>L',
      'cup>mL',
      's>min',
      'min>h',
      'h>day',
      'day>week',
    ]);
    const metric = new Set(['mm', 'cm', 'm', 'km', 'g', 'kg', 't', 'mL', 'L']);
    for (const t of at('unit_conversion', 3)) {
      const { dimension, from, to, value, decimals, tolerance } = md(t);
      const exact =
        dimension === 'temperature' ? fromKelvin(kelvin(value, from), to) : (value * toBase[from]!) / toBase[to]!;
      expect(Math.abs(Number(t.reference) - exact)).toBeLessThanOrEqual(0.5 * 10 ** -decimals + 1e-9);
      expect(tolerance).toBeCloseTo(0.5 * 10 ** -decimals, 12);
      expect(direct.has(`${from}>${to}`) || direct.has(`${to}>${from}`) || (metric.has(from) && metric.has(to))).toBe(
        false,
      );
      if (dimension === 'temperature') expect([from, to].sort()).toEqual(['F', 'K']);
    }
  });

  it('string_transform: one 3–4 letter word at level 1; long words or 4–6 word phrases at level 3', () => {
    for (const t of at('string_transform', 1)) {
      const { operation, input } = md(t);
      expect(input).toMatch(operation === 'reverse' ? /^[a-z]{3}$/ : /^[a-z]{3,4}$/);
      expect(t.reference).toBe(STRING_ORACLE[operation]!(input, ''));
      expect(t.prompt).toContain(`"${input}"`);
    }
    for (const t of at('string_transform', 3)) {
      const { operation, input, letter } = md(t);
      expect(input).toMatch(/^[a-z]{8,10}$|^[a-z]+( [a-z]+){3,5}$/);
      expect(t.reference).toBe(STRING_ORACLE[operation]!(input, letter));
      expect(t.prompt).toContain(`"${input}"`);
    }
  });

  it('multi_step: two steps on single digits at level 1; one step more than level 2 at level 3', () => {
    const easy: Record<string, (v: Record<string, number>) => number> = {
      giveaway: (v) => v.a! * v.b! - v.c!,
      packs: (v) => v.a! * v.b! + v.c!,
      allowance: (v) => v.a! + v.b! * v.c!,
      sharing: (v) => (v.a! + v.b!) / v.c!,
      older: (v) => v.a! + v.b! + v.c!,
    };
    for (const t of at('multi_step', 1)) {
      const { scenario, values, steps } = md(t);
      const expected = easy[scenario]!(values);
      expect(Number.isInteger(expected) && expected > 0).toBe(true);
      expect(t.reference).toBe(String(expected));
      expect(steps).toBe(2);
      expect(numbersIn(t.prompt).every((n) => n >= 0 && n <= 9)).toBe(true);
      for (const v of Object.values(values as Record<string, number>)) expect(numbersIn(t.prompt)).toContain(v);
    }
    const hard: Record<string, (v: Record<string, number>) => number> = {
      shopping: (v) => v.bill! - (v.a! * v.p! + v.b! * v.q! + v.c! * v.r!),
      ages: (v) => 3 * v.age! + 2 * v.d! - v.e! + 3 * v.k!,
      travel: (v) => v.s1! * v.h1! + v.s2! * v.h2! + v.s3! * v.h3!,
      printing: (v) => (v.copies! * v.pages!) / (v.r1! + v.r2!),
      savings: (v) => v.saved! + v.weekly! * v.weeks! - v.spent1! - v.spent2!,
      discount: (v) => v.bill! - (v.count! * v.price! * (100 - v.percent!)) / 100,
      baking: (v) => (v.batches! * v.perBatch! + v.extra! - v.eaten!) / v.boxes!,
    };
    const originalSteps = Object.fromEntries(at('multi_step', 2).map((t) => [md(t).scenario, md(t).steps]));
    for (const t of at('multi_step', 3)) {
      const { scenario, values, steps } = md(t);
      const expected = hard[scenario]!(values);
      expect(Number.isInteger(expected) && expected > 0).toBe(true);
      expect(t.reference).toBe(String(expected));
      expect(steps).toBeGreaterThan(originalSteps[scenario]);
      if (scenario === 'ages') expect(values.age + values.d - values.e).toBeGreaterThan(0);
      for (const v of Object.values(values as Record<string, number>)) expect(numbersIn(t.prompt)).toContain(v);
    }
  });
});

describe('--tasks SUITE@DIFFICULTY', () => {
  const base = configSchema.parse({}).tasks;

  it('runs that level of the suite, enough tasks for --n in the split', () => {
    for (const suite of BUILTIN_SUITES) {
      for (const level of [0, 1, 2, 3] as const) {
        const tasks = tasksForRun(base, '.', { spec: `${suite}@${level}`, n: 30, split: 'train' });
        expect(tasks).toHaveLength(30);
        expect(
          tasks.every((t) => t.id.startsWith(level === 2 ? `suite:${suite}:1:` : `suite:${suite}@${level}:1:`)),
        ).toBe(true);
      }
      expect(tasksForRun(base, '.', { spec: `${suite}@0`, n: 5, split: 'all' })).toEqual(
        tasksForRun(base, '.', { spec: suite, n: 5, split: 'all' }),
      );
    }
  });

  it('names the levels for one that does not exist, unless a file has that name', () => {
    expect(() => tasksForRun(base, '.', { spec: 'multi_step@4', split: 'all' })).toThrow(
      '--tasks multi_step@4: difficulty must be 0, 1, 2 or 3 (multi_step@0, multi_step@1, multi_step@2, multi_step@3)',
    );
    expect(() => tasksForRun(base, '.', { spec: 'algebra@1', split: 'all' })).toThrow(
      /--tasks algebra@1: not a built-in suite \(.*<suite>@<difficulty 0–3>\) and no such file/,
    );
    const dir = tempDir({ 'arithmetic@x.jsonl': '{"id": "a", "prompt": "p"}\n' });
    const cwd = process.cwd();
    try {
      process.chdir(dir);
      expect(tasksForRun(base, '.', { spec: 'arithmetic@x.jsonl', split: 'all' }).map((t) => t.id)).toEqual(['a']);
    } finally {
      process.chdir(cwd);
    }
  });
});
