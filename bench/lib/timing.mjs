import { performance } from 'node:perf_hooks';

/** Seconds taken by fn (awaited if it returns a promise). */
export async function timeSeconds(fn) {
  const start = performance.now();
  await fn();
  return (performance.now() - start) / 1000;
}

/** Full GC between samples when the process runs with --expose-gc, so one sample's garbage doesn't bill the next. */
export function collectGarbage() {
  if (typeof globalThis.gc === 'function') globalThis.gc();
}

/**
 * Runs every variant once per round, rotating which one goes first, and returns the samples per variant
 * in round order. Interleaving spreads machine noise (other load, page cache, CPU frequency) over all variants.
 */
export async function runInterleaved(variants, rounds, onSample = () => {}) {
  const samples = Object.fromEntries(variants.map((v) => [v.name, []]));
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < variants.length; i++) {
      const variant = variants[(i + round) % variants.length];
      collectGarbage();
      const sample = await variant.run();
      samples[variant.name].push(sample);
      onSample(variant.name, round, sample);
    }
  }
  return samples;
}
