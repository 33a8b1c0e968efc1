import type { Rng } from '../prng.js';
import type { Difficulty } from '../types.js';
import { ASK_NUMBER, defineSuite, type GeneratedTask } from './define.js';
import { EASY_TEMPLATES, makeEasy } from './multi-step-easy.js';
import { HARD_TEMPLATES, makeHard } from './multi-step-hard.js';
import { MULTI_STEP_STARTER } from './starter-levels.js';
import { NAMES } from './vocab.js';

interface Scenario {
  /** Arithmetic operations a solver needs. */
  steps: number;
  values: Record<string, number>;
  text: string;
  answer: number;
}

type Builder = (rng: Rng, name: string, other: string) => Scenario;

const SCENARIOS: Record<string, Builder> = {
  shopping: (rng, name) => {
    const a = rng.int(2, 5),
      p = rng.int(2, 9),
      b = rng.int(2, 6),
      q = rng.int(1, 4);
    const total = a * p + b * q;
    const bill = total < 50 ? 50 : 100;
    return {
      steps: 4,
      values: { a, p, b, q, bill },
      answer: bill - total,
      text: `${name} buys ${a} notebooks at $${p} each and ${b} pens at $${q} each, and pays with a $${bill} bill. How many dollars of change does ${name} get?`,
    };
  },
  ages: (rng, name, other) => {
    const age = rng.int(5, 40),
      d = rng.int(2, 15),
      k = rng.int(2, 10);
    return {
      steps: 3,
      values: { age, d, k },
      answer: age + (age + d) + 2 * k,
      text: `${name} is ${age} years old. ${other} is ${d} years older than ${name}. What will the sum of their ages be in ${k} years?`,
    };
  },
  travel: (rng) => {
    const s1 = rng.pick([40, 50, 60, 70, 80, 90]),
      h1 = rng.int(1, 4),
      s2 = rng.pick([30, 45, 60, 75, 100]),
      h2 = rng.int(1, 3);
    return {
      steps: 3,
      values: { s1, h1, s2, h2 },
      answer: s1 * h1 + s2 * h2,
      text: `A train travels at ${s1} km/h for ${h1} hour${h1 === 1 ? '' : 's'}, then at ${s2} km/h for ${h2} hour${h2 === 1 ? '' : 's'}. How many kilometers does it travel in total?`,
    };
  },
  printing: (rng, name) => {
    const copies = rng.int(2, 6),
      pages = rng.int(4, 12);
    // The rate divides the total page count, so the answer is a whole number of minutes.
    const rates = [2, 3, 4, 5, 6, 8, 10, 12].filter((r) => (copies * pages) % r === 0);
    const rate = rng.pick(rates.length ? rates : [1]);
    return {
      steps: 2,
      values: { copies, pages, rate },
      answer: (copies * pages) / rate,
      text: `A printer prints ${rate} page${rate === 1 ? '' : 's'} per minute. ${name} needs ${copies} copies of a ${pages}-page report. How many minutes will the printing take?`,
    };
  },
  savings: (rng, name) => {
    const saved = rng.int(5, 60),
      weekly = rng.int(3, 20),
      weeks = rng.int(2, 8);
    const spent = rng.int(5, saved + weekly * weeks - 1);
    return {
      steps: 3,
      values: { saved, weekly, weeks, spent },
      answer: saved + weekly * weeks - spent,
      text: `${name} has $${saved} saved and adds $${weekly} every week. After ${weeks} weeks, ${name} spends $${spent} on a bicycle helmet. How many dollars does ${name} have left?`,
    };
  },
  discount: (rng, name) => {
    const price = 20 * rng.int(1, 6),
      percent = rng.pick([10, 20, 25, 50]),
      count = rng.int(2, 4);
    return {
      steps: 3,
      values: { price, percent, count },
      answer: ((price * (100 - percent)) / 100) * count,
      text: `A jacket costs $${price}. It is on sale for ${percent}% off. ${name} buys ${count} jackets at the sale price. How many dollars does ${name} pay in total?`,
    };
  },
  baking: (rng, name) => {
    const batches = rng.int(2, 5),
      perBatch = rng.int(6, 12),
      boxes = rng.int(2, 6);
    const total = batches * perBatch;
    // Eat enough that the rest splits evenly, and leave at least one cookie per box.
    const base = total % boxes || boxes;
    const eaten = base + (total - base - boxes >= boxes ? boxes * rng.int(0, 1) : 0);
    return {
      steps: 3,
      values: { batches, perBatch, boxes, eaten },
      answer: (total - eaten) / boxes,
      text: `${name} bakes ${batches} batches of ${perBatch} cookies. ${eaten} cookies are eaten, and the rest are packed equally into ${boxes} boxes. How many cookies go in each box?`,
    };
  },
};

function make(rng: Rng): GeneratedTask {
  const scenario = rng.pick(Object.keys(SCENARIOS));
  const [name, other] = rng.sample(NAMES, 2) as [string, string];
  const s = SCENARIOS[scenario]!(rng, name, other);
  return {
    kind: scenario,
    prompt: `${s.text} ${ASK_NUMBER}`,
    reference: String(s.answer),
    answerType: 'number',
    metadata: { scenario, steps: s.steps, values: s.values },
  };
}

/** The level used when a task source names none. */
export const MULTI_STEP_DEFAULT_LEVEL: Difficulty = 0;

export const multiStep = defineSuite({
  name: 'multi_step',
  describe: '2–4 step word problems (shopping, ages, travel, rates, savings, discounts) with a whole-number answer',
  defaultLevel: MULTI_STEP_DEFAULT_LEVEL,
  levels: {
    0: {
      describe:
        "word problems of one or two additions or subtractions of numbers up to 9 (two people's things together; some given away; gets some, then loses some)",
      ...MULTI_STEP_STARTER,
    },
    1: {
      describe: 'two steps, every number a single digit (a boxes of b, then c given away; shares; ages; daily savings)',
      templates: EASY_TEMPLATES,
      make: makeEasy,
    },
    2: {
      describe: '2–4 steps: shopping change, ages, travel, printing time, savings, discounts, baking',
      templates: Object.fromEntries(Object.keys(SCENARIOS).map((k) => [k, ['0']])),
      make,
    },
    3: {
      describe: 'the level 2 scenarios with one more step (a third item, person, leg or purchase) and bigger numbers',
      templates: HARD_TEMPLATES,
      make: makeHard,
    },
  },
});
