import type { Rng } from '../prng.js';
import type { Difficulty } from '../types.js';
import { ASK_NUMBER, defineSuite, sameTemplates, type GeneratedTask } from './define.js';
import { makeMetricStep, METRIC_DIMENSIONS } from './metric-steps.js';
import { UNITS_STARTER } from './starter-levels.js';
import {
  conversionQuestion,
  convertTemperature,
  LINEAR_UNITS,
  TEMPERATURE_HINT,
  TEMPERATURE_UNITS,
  type Dimension,
  type Unit,
} from './units.js';

type AnyDimension = Dimension | 'temperature';
const DIMENSIONS: AnyDimension[] = ['length', 'mass', 'time', 'volume', 'temperature'];

function roundingText(decimals: number): string {
  return decimals === 0
    ? 'Round to the nearest whole number.'
    : `Round to ${decimals} decimal place${decimals === 1 ? '' : 's'}.`;
}

/** Fewer decimals for big results, more for small ones, so the rounded answer keeps ~3 significant digits or more. */
function chooseDecimals(result: number, rng: Rng): number {
  const abs = Math.abs(result);
  if (abs < 1) return 3;
  if (abs < 10) return 2;
  return rng.pick(abs < 100 ? [1, 2] : abs < 1000 ? [0, 1, 2] : [0, 1]);
}

/** A result exactly halfway between two rounded values would make the stated rounding ambiguous. */
function nearTie(result: number, decimals: number): boolean {
  const scaled = Math.abs(result) * 10 ** decimals;
  return Math.abs(scaled - Math.floor(scaled) - 0.5) < 1e-6;
}

type PairOf = (rng: Rng, dimension: AnyDimension, units: Unit[]) => [Unit, Unit];

/** A conversion rounded as its prompt states; the level picks the unit pair and how often the value has a decimal. */
const makeRounded =
  (pairOf: PairOf, decimalShare: number) =>
  (rng: Rng): GeneratedTask => {
    const dimension = rng.pick(DIMENSIONS);
    const units = dimension === 'temperature' ? TEMPERATURE_UNITS : LINEAR_UNITS[dimension];
    for (;;) {
      // Retried until the result is a sensible size and not a rounding tie; most draws pass.
      const [from, to] = pairOf(rng, dimension, units);
      // Mostly whole numbers; sometimes one decimal, e.g. 2.5.
      const value =
        rng.next() < decimalShare ? rng.int(from.range[0] * 10, from.range[1] * 10) / 10 : rng.int(...from.range);
      const result =
        dimension === 'temperature' ? convertTemperature(value, from.key, to.key) : (value * from.toBase) / to.toBase;
      const decimals = chooseDecimals(result, rng);
      const rounded = Math.round(result * 10 ** decimals) / 10 ** decimals;
      if (Math.abs(result) < 0.01 || Math.abs(result) >= 100_000 || rounded === 0 || nearTie(result, decimals))
        continue;

      const template = rng.int(0, dimension === 'temperature' ? 1 : 2);
      const hints =
        dimension === 'temperature' ? [TEMPERATURE_HINT] : [from.hint, to.hint].filter(Boolean).map((h) => `Use ${h}.`);
      // Half a unit in the last stated place: any value that rounds to the reference counts, an off-by-one digit does not.
      const tolerance = 0.5 * 10 ** -decimals;
      return {
        kind: dimension,
        prompt: [
          conversionQuestion(template, dimension, value, from, to),
          ...hints,
          roundingText(decimals),
          ASK_NUMBER,
        ].join(' '),
        reference: rounded.toFixed(decimals),
        answerType: 'number',
        tolerance,
        metadata: { dimension, from: from.key, to: to.key, value, decimals, template },
      };
    }
  };

/** Time units a single factor (60, 24 or 7) apart. */
const ADJACENT_TIME = new Set(['s>min', 'min>h', 'h>day', 'day>week']);

/** Level 3: no one stated factor or metric step gives the answer (miles → meters, inches → feet, seconds → days, °F → K). */
function chained(dimension: AnyDimension, a: Unit, b: Unit): boolean {
  if (dimension === 'temperature') return a.key !== 'C' && b.key !== 'C';
  if (dimension === 'time') return !ADJACENT_TIME.has(`${a.key}>${b.key}`) && !ADJACENT_TIME.has(`${b.key}>${a.key}`);
  if (!a.hint && !b.hint) return false;
  return a.hintTo !== b.key && b.hintTo !== a.key;
}

const CHAINED = Object.fromEntries(
  DIMENSIONS.map((d) => {
    const units = d === 'temperature' ? TEMPERATURE_UNITS : LINEAR_UNITS[d];
    return [d, units.flatMap((a) => units.filter((b) => b !== a && chained(d, a, b)).map((b): [Unit, Unit] => [a, b]))];
  }),
) as Record<AnyDimension, [Unit, Unit][]>;

/** The level used when a task source names none. */
export const UNIT_CONVERSION_DEFAULT_LEVEL: Difficulty = 0;

const templates = Object.fromEntries(DIMENSIONS.map((d) => [d, d === 'temperature' ? ['0', '1'] : ['0', '1', '2']]));

export const unitConversion = defineSuite({
  name: 'unit_conversion',
  describe: 'length, mass, time, volume and temperature conversions with a stated rounding',
  defaultLevel: UNIT_CONVERSION_DEFAULT_LEVEL,
  levels: {
    0: {
      describe:
        '2–9 of a unit into a smaller one, multiplying by the factor stated first (1 hour = 60 minutes. How many minutes are in 3 hours?)',
      ...UNITS_STARTER,
    },
    1: {
      describe: 'one metric step of 10, 100 or 1000 (km → m, g → kg, mL → L, …) on 1–9 whole units, the factor stated',
      templates: sameTemplates(METRIC_DIMENSIONS, 3),
      make: makeMetricStep,
    },
    2: {
      describe: 'any two units of a dimension, sometimes a decimal value, rounded as stated',
      templates,
      make: makeRounded((rng, _d, units) => rng.sample(units, 2) as [Unit, Unit], 0.3),
    },
    3: {
      describe: 'two-step conversions (miles → meters, inches → feet, seconds → days, °F → K), more decimal values',
      templates,
      make: makeRounded((rng, d) => rng.pick(CHAINED[d]), 0.5),
    },
  },
});
