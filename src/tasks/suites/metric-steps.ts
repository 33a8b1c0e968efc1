import type { Rng } from '../prng.js';
import { ASK_NUMBER, type GeneratedTask } from './define.js';
import { conversionQuestion, LINEAR_UNITS, type Dimension, type Unit } from './units.js';

/** unit_conversion level 1: one metric step of 10, 100 or 1000, with the factor stated and a whole-number answer. */
export const METRIC_DIMENSIONS = ['length', 'mass', 'volume'] as const satisfies Dimension[];

const STEPS: Record<(typeof METRIC_DIMENSIONS)[number], [big: string, small: string][]> = {
  length: [
    ['km', 'm'],
    ['m', 'cm'],
    ['cm', 'mm'],
    ['m', 'mm'],
  ],
  mass: [
    ['kg', 'g'],
    ['t', 'kg'],
  ],
  volume: [['L', 'mL']],
};

const unit = (dimension: Dimension, key: string): Unit => LINEAR_UNITS[dimension].find((u) => u.key === key)!;

export function makeMetricStep(rng: Rng): GeneratedTask {
  const dimension = rng.pick(METRIC_DIMENSIONS);
  const [big, small] = rng.pick(STEPS[dimension]).map((k) => unit(dimension, k)) as [Unit, Unit];
  const factor = Math.round(big.toBase / small.toBase);
  const units = rng.int(1, 9);
  // Down (3 km → 3000 m) or up (3000 m → 3 km): the answer is whole either way.
  const down = rng.next() < 0.5;
  const [from, to, value, answer] = down ? [big, small, units, units * factor] : [small, big, units * factor, units];
  const template = rng.int(0, 2);
  return {
    kind: dimension,
    prompt: [
      conversionQuestion(template, dimension, value, from, to),
      `Use 1 ${big.singular} = ${factor} ${small.plural}.`,
      ASK_NUMBER,
    ].join(' '),
    reference: String(answer),
    answerType: 'number',
    // As the other levels: half a unit in the last place (the answer is whole).
    tolerance: 0.5,
    metadata: { dimension, from: from.key, to: to.key, value, decimals: 0, template },
  };
}
