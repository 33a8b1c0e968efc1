import type { Rng } from '../prng.js';
import { scenarioTask, type GeneratedTask } from './define.js';
import { NAMES } from './vocab.js';

/** multi_step level 3: the level 2 scenarios with one more step and bigger numbers, in two phrasings each. */
interface Hard {
  steps: number;
  values: Record<string, number>;
  answer: number;
  texts: [string, string];
}

type Builder = (rng: Rng, name: string, other: string, third: string) => Hard;

const hours = (h: number) => `${h} hour${h === 1 ? '' : 's'}`;
/** The smallest bill above the total, so there is always change. */
const billFor = (total: number) => [100, 200, 500, 1000, 2000].find((b) => b > total)!;

const HARD: Record<string, Builder> = {
  shopping: (rng, name) => {
    const a = rng.int(3, 9),
      p = rng.int(4, 15),
      b = rng.int(2, 8),
      q = rng.int(2, 6),
      c = rng.int(2, 6),
      r = rng.int(1, 3);
    const bill = billFor(a * p + b * q + c * r);
    return {
      steps: 6,
      values: { a, p, b, q, c, r, bill },
      answer: bill - (a * p + b * q + c * r),
      texts: [
        `${name} buys ${a} notebooks at $${p} each, ${b} pens at $${q} each and ${c} erasers at $${r} each, and pays with a $${bill} bill. How many dollars of change does ${name} get?`,
        `Notebooks cost $${p}, pens $${q} and erasers $${r}. ${name} buys ${a} notebooks, ${b} pens and ${c} erasers and pays with a $${bill} bill. How many dollars of change should ${name} get back?`,
      ],
    };
  },
  ages: (rng, name, other, third) => {
    const age = rng.int(10, 60),
      d = rng.int(2, 25),
      e = rng.int(2, Math.min(20, age + d - 1)),
      k = rng.int(3, 20);
    return {
      steps: 5,
      values: { age, d, e, k },
      answer: age + (age + d) + (age + d - e) + 3 * k,
      texts: [
        `${name} is ${age} years old. ${other} is ${d} years older than ${name}, and ${third} is ${e} years younger than ${other}. What will the sum of their three ages be in ${k} years?`,
        `${other} is ${d} years older than ${name}, and ${third} is ${e} years younger than ${other}. ${name} is ${age} today. In ${k} years, what will their three ages add up to?`,
      ],
    };
  },
  travel: (rng) => {
    const speeds = [40, 50, 60, 70, 80, 90, 100, 110, 120];
    const s1 = rng.pick(speeds),
      h1 = rng.int(1, 5),
      s2 = rng.pick(speeds),
      h2 = rng.int(1, 5),
      s3 = rng.pick(speeds),
      h3 = rng.int(1, 5);
    return {
      steps: 5,
      values: { s1, h1, s2, h2, s3, h3 },
      answer: s1 * h1 + s2 * h2 + s3 * h3,
      texts: [
        `A train travels at ${s1} km/h for ${hours(h1)}, then at ${s2} km/h for ${hours(h2)}, and finally at ${s3} km/h for ${hours(h3)}. How many kilometers does it travel in total?`,
        `A truck drives ${hours(h1)} at ${s1} km/h, ${hours(h2)} at ${s2} km/h and ${hours(h3)} at ${s3} km/h. What total distance does it cover, in kilometers?`,
      ],
    };
  },
  printing: (rng, name) => {
    // pages itself divides the page count, so some combined rate from 4 to 20 always gives whole minutes.
    const copies = rng.int(3, 12),
      pages = rng.int(8, 20),
      total = copies * pages;
    const combined = rng.pick(Array.from({ length: 17 }, (_, i) => i + 4).filter((s) => total % s === 0));
    const r1 = rng.int(2, combined - 2),
      r2 = combined - r1;
    return {
      steps: 4,
      values: { copies, pages, r1, r2 },
      answer: total / combined,
      texts: [
        `Two printers print ${r1} and ${r2} pages per minute. Working together, how many minutes do they take to print ${copies} copies of a ${pages}-page report?`,
        `${name} needs ${copies} copies of a ${pages}-page report. One printer prints ${r1} pages per minute and a second prints ${r2} pages per minute. If both print at the same time, how many minutes does the job take?`,
      ],
    };
  },
  savings: (rng, name) => {
    const saved = rng.int(20, 200),
      weekly = rng.int(10, 60),
      weeks = rng.int(3, 12),
      total = saved + weekly * weeks;
    const spent1 = rng.int(5, Math.floor(total / 2)),
      spent2 = rng.int(5, total - spent1 - 1);
    return {
      steps: 4,
      values: { saved, weekly, weeks, spent1, spent2 },
      answer: total - spent1 - spent2,
      texts: [
        `${name} has $${saved} saved and adds $${weekly} every week. After ${weeks} weeks, ${name} spends $${spent1} on a helmet and $${spent2} on a lock. How many dollars does ${name} have left?`,
        `${name} starts with $${saved} and saves $${weekly} a week for ${weeks} weeks, then buys a helmet for $${spent1} and a lock for $${spent2}. How many dollars are left?`,
      ],
    };
  },
  discount: (rng, name) => {
    // A multiple of $20 at a multiple of 5% off is a whole number of dollars.
    const price = 20 * rng.int(2, 10),
      percent = rng.pick([10, 15, 20, 25, 30, 40, 50]),
      count = rng.int(2, 6);
    const total = ((price * (100 - percent)) / 100) * count,
      bill = billFor(total);
    return {
      steps: 4,
      values: { price, percent, count, bill },
      answer: bill - total,
      texts: [
        `A jacket costs $${price}. It is on sale for ${percent}% off. ${name} buys ${count} jackets at the sale price and pays with $${bill}. How many dollars of change does ${name} get?`,
        `Jackets usually cost $${price} each, but today they are ${percent}% off. ${name} buys ${count} of them and hands over $${bill}. How many dollars of change does ${name} receive?`,
      ],
    };
  },
  baking: (rng, name, other) => {
    const batches = rng.int(3, 8),
      perBatch = rng.int(12, 24),
      extra = rng.int(1, 20),
      boxes = rng.int(3, 8);
    const total = batches * perBatch + extra;
    // Eat enough that the rest splits evenly; at least 37 cookies minus at most 24 eaten leaves one per box.
    const eaten = (total % boxes || boxes) + boxes * rng.int(0, 2);
    return {
      steps: 4,
      values: { batches, perBatch, extra, boxes, eaten },
      answer: (total - eaten) / boxes,
      texts: [
        `${name} bakes ${batches} batches of ${perBatch} cookies and ${other} bakes ${extra} more cookies. ${eaten} cookies are eaten, and the rest are packed equally into ${boxes} boxes. How many cookies go in each box?`,
        `${name} makes ${batches} trays of ${perBatch} cookies, and ${other} adds ${extra} cookies. After ${eaten} cookies are eaten, the rest are shared equally among ${boxes} boxes. How many cookies does each box get?`,
      ],
    };
  },
};

export const HARD_TEMPLATES = Object.fromEntries(Object.keys(HARD).map((k) => [k, ['0', '1']]));

export function makeHard(rng: Rng): GeneratedTask {
  const scenario = rng.pick(Object.keys(HARD));
  const [name, other, third] = rng.sample(NAMES, 3) as [string, string, string];
  const s = HARD[scenario]!(rng, name, other, third);
  return scenarioTask(scenario, s, s.steps, rng.int(0, 1));
}
