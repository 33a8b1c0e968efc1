import type { Rng } from '../tasks/prng.js';

/** A float in (0, 1]: safe under a logarithm. */
const open = (rng: Rng) => 1 - rng.next();

/** A standard normal draw (Box–Muller). */
export function gaussian(rng: Rng): number {
  return Math.sqrt(-2 * Math.log(open(rng))) * Math.cos(2 * Math.PI * rng.next());
}

/** A Gamma(shape, 1) draw (Marsaglia–Tsang; shapes below 1 boosted). */
export function gamma(rng: Rng, shape: number): number {
  if (!(shape > 0)) throw new Error(`gamma shape must be positive, got ${shape}`);
  if (shape < 1) return gamma(rng, shape + 1) * Math.pow(open(rng), 1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = gaussian(rng);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = open(rng);
    if (u < 1 - 0.0331 * x ** 4 || Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v;
  }
}

/** A Beta(a, b) draw. */
export function betaDraw(rng: Rng, a: number, b: number): number {
  const x = gamma(rng, a);
  return x / (x + gamma(rng, b));
}

/** An index drawn with the given probabilities (which sum to 1). */
export function categorical(rng: Rng, probs: readonly number[]): number {
  const u = rng.next();
  let acc = 0;
  for (let i = 0; i < probs.length; i++) {
    acc += probs[i]!;
    if (u < acc) return i;
  }
  // Rounding left u above the total: the last arm with any probability.
  for (let i = probs.length - 1; i >= 0; i--) if (probs[i]! > 0) return i;
  return probs.length - 1;
}

/** The first index of the largest value. */
export function argmax(values: readonly number[]): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[best]!) best = i;
  return best;
}

export const dot = (a: readonly number[], b: readonly number[]) => a.reduce((s, v, i) => s + v * b[i]!, 0);
