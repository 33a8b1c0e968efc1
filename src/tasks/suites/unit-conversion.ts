import type { Rng } from '../prng.js';
import { ASK_NUMBER, defineSuite, type GeneratedTask } from './define.js';
import { convertTemperature, LINEAR_UNITS, SUBJECTS, TEMPERATURE_HINT, TEMPERATURE_UNITS, type Dimension, type Unit } from './units.js';

type AnyDimension = Dimension | 'temperature';
const DIMENSIONS: AnyDimension[] = ['length', 'mass', 'time', 'volume', 'temperature'];

const named = (value: number, unit: Unit) => `${value} ${value === 1 ? unit.singular : unit.plural}`;

function roundingText(decimals: number): string {
  return decimals === 0 ? 'Round to the nearest whole number.' : `Round to ${decimals} decimal place${decimals === 1 ? '' : 's'}.`;
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

function make(rng: Rng): GeneratedTask {
  const dimension = rng.pick(DIMENSIONS);
  const units = dimension === 'temperature' ? TEMPERATURE_UNITS : LINEAR_UNITS[dimension];
  for (;;) {
    // Retried until the result is a sensible size and not a rounding tie; most draws pass.
    const [from, to] = rng.sample(units, 2) as [Unit, Unit];
    // Mostly whole numbers; sometimes one decimal, e.g. 2.5.
    const value = rng.next() < 0.3 ? rng.int(from.range[0] * 10, from.range[1] * 10) / 10 : rng.int(...from.range);
    const result = dimension === 'temperature' ? convertTemperature(value, from.key, to.key) : (value * from.toBase) / to.toBase;
    const decimals = chooseDecimals(result, rng);
    const rounded = Math.round(result * 10 ** decimals) / 10 ** decimals;
    if (Math.abs(result) < 0.01 || Math.abs(result) >= 100_000 || rounded === 0 || nearTie(result, decimals)) continue;

    const template = rng.int(0, dimension === 'temperature' ? 1 : 2);
    const question = [
      `Convert ${named(value, from)} to ${to.plural}.`,
      `${SUBJECTS[dimension]} ${named(value, from)}. What is that in ${to.plural}?`,
      `How many ${to.plural} are in ${named(value, from)}?`,
    ][template]!;
    const hints = dimension === 'temperature' ? [TEMPERATURE_HINT] : [from.hint, to.hint].filter(Boolean).map((h) => `Use ${h}.`);
    // Half a unit in the last stated place: any value that rounds to the reference counts, an off-by-one digit does not.
    const tolerance = 0.5 * 10 ** -decimals;
    return {
      kind: dimension,
      prompt: [question, ...hints, roundingText(decimals), ASK_NUMBER].join(' '),
      reference: rounded.toFixed(decimals),
      answerType: 'number',
      tolerance,
      metadata: { dimension, from: from.key, to: to.key, value, decimals, template },
    };
  }
}

export const unitConversion = defineSuite(
  'unit_conversion',
  'length, mass, time, volume and temperature conversions with a stated rounding',
  make,
);
