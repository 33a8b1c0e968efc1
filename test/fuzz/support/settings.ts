import fc from 'fast-check';

/**
 * How many cases a fuzz run makes, from which seed. Defaults keep `npm test` to a few hundred cases;
 * FUZZ_CASES=5000 runs thousands, FUZZ_SEED picks another (or a `random`) seed, and FUZZ_ONLY=target:case
 * (as printed for a failure) re-runs one case of that seed.
 */
export const DEFAULT_SEED = 20_251_120;

const env = process.env;
const seedText = env.FUZZ_SEED ?? String(DEFAULT_SEED);
const only = env.FUZZ_ONLY ? /^([a-z-]+):(\d+)$/.exec(env.FUZZ_ONLY) : null;
if (env.FUZZ_ONLY && !only) throw new Error(`FUZZ_ONLY=${env.FUZZ_ONLY}: expected target:case, e.g. config:17`);

export const SETTINGS = {
  seed: seedText === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(seedText),
  /** CLI cases in all, shared between the targets below. */
  cases: Number(env.FUZZ_CASES ?? 240),
  only: only ? { target: only[1]!, index: Number(only[2]) } : null,
  /** A case that has not exited by then is killed and counted as a hang. */
  caseTimeoutMs: Number(env.FUZZ_CASE_TIMEOUT_MS ?? 30_000),
  parallel: Math.max(1, Number(env.FUZZ_PARALLEL ?? 2)),
};
if (!Number.isInteger(SETTINGS.seed) || !Number.isInteger(SETTINGS.cases) || SETTINGS.cases < 0) {
  throw new Error(`FUZZ_SEED=${seedText} FUZZ_CASES=${env.FUZZ_CASES}: expected integers`);
}

export const SHARES = { config: 0.36, tasks: 0.28, massgen: 0.28, 'non-regular': 0.08 } as const;
export type Target = keyof typeof SHARES;

/** The case indexes of a target for this run. */
export function caseIndexes(target: Target): number[] {
  if (SETTINGS.only) return SETTINGS.only.target === target ? [SETTINGS.only.index] : [];
  return Array.from({ length: Math.max(1, Math.round(SETTINGS.cases * SHARES[target])) }, (_, i) => i);
}

/** Case `index` of a target: generated from its own seed, so it does not depend on how many cases run. */
export function generateCase<T>(target: Target, index: number, arb: fc.Arbitrary<T>): T {
  const seed = (SETTINGS.seed * 31 + Object.keys(SHARES).indexOf(target) * 1_000_003 + index * 7919) | 0;
  return fc.sample(arb, { seed, numRuns: 1 })[0]!;
}
