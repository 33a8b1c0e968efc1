// The nights benchmark's figures (bench/lib/nights-report.mjs): the end-of-run training diagnostics, level-0 success,
// the suites a promoted cycle made worse, and the targets as headline lines.
import { describe, expect, it } from 'vitest';
import {
  levelZero,
  nightsHeadlines,
  nightsLines,
  productionLevelZero,
  regressedSuites,
  trainDiagnostics,
  // @ts-expect-error bench/ is plain ESM JavaScript without type declarations
} from '../../bench/lib/nights-report.mjs';

const diff = (mean: number, low: number, high: number) => ({ mean, low, high });
const level = (suite: string, lvl: number, pairs: number, base: number, production: number, d = diff(0, -1, 1)) => ({
  suite,
  level: lvl,
  pairs,
  success: { base, production, diff: d },
});

describe('nights report', () => {
  it("averages the trainer's last logged steps, reading TRL's own metrics under `metrics`", () => {
    const steps = Array.from({ length: 12 }, (_, i) => ({
      step: i + 1,
      metrics: { loss: 1, metrics: { 'rewards/chosen': i < 2 ? -5 : i - 2, entropy: 1.5 } },
    }));
    // the last 10 steps: rewards/chosen 0 … 9
    expect(trainDiagnostics(steps)).toEqual({ steps: 12, loss: 1, 'rewards/chosen': 4.5, entropy: 1.5 });
    expect(trainDiagnostics([])).toEqual({ steps: 0 });
  });

  it('pools level-0 success over the suites by pairs, and takes production from the cycle when it is the base', () => {
    const vs = { levels: [level('a', 0, 30, 0.2, 0.5), level('b', 0, 10, 0.6, 0.9), level('a', 1, 8, 0, 0.5)] };
    expect(levelZero(vs)).toEqual({ pairs: 40, base: 0.3, production: 0.6 });
    expect(productionLevelZero({ vsBase: vs })).toBe(0.6);
    // not promoted yet: production is the base, its side of the cycle's evaluation is the baseline's
    expect(productionLevelZero({ vsBase: null, candidateVsProduction: vs })).toBe(0.3);
  });

  it('names the suites a promoted candidate made worse (CI wholly below 0), and none for a refused one', () => {
    const levels = [
      level('a', 0, 30, 0.5, 0.3, diff(-0.2, -0.3, -0.05)),
      level('b', 0, 30, 0.5, 0.4, diff(-0.1, -0.2, 0.02)),
    ];
    expect(regressedSuites({ promoted: true, candidateVsProduction: { levels } })).toEqual(['a']);
    expect(regressedSuites({ promoted: false, candidateVsProduction: { levels } })).toEqual([]);
  });

  it('holds the last cycle to the targets and writes one table row per cycle', () => {
    const cycle = (k: number, promoted: boolean) => ({
      cycle: k,
      promoted,
      outcome: promoted ? 'promoted' : 'refused: min_improvement',
      levels: { a: 2, b: 1 },
      headroom: { tasks: 10, never: 2, sometimes: 5, always: 3 },
      examplesTrained: 20,
      trainSteps: 10,
      dataset: { counts: { correctness_pairs: 12, rationalized_pairs: 8 } },
      training: { 'rewards/chosen': 0.4 },
      candidateVsProduction: { success: { diff: diff(0.1, 0.02, 0.2) }, levels: [], seeds: k === 2 ? 3 : 1 },
      vsBase: { success: { diff: diff(0.5, 0.4, 0.6) }, levels: [level('a', 0, 40, 0.28, 0.85)] },
      transfer: { production: 3, success: { diff: diff(0.3, 0.1, 0.45) } },
      wallSeconds: 600,
      cpuSeconds: 900,
    });
    const r = { suites: ['a', 'b'], perCycle: [1, 2, 3, 4, 5, 6, 7].map((k) => cycle(k, k !== 4)) };
    const lines = nightsLines(r);
    expect(lines).toHaveLength(2 + 7);
    expect(lines[2]).toContain('| 12 correctness + 8 rationalized (10) |');
    expect(lines[2]).toContain('28.0 % → 85.0 %');
    // a candidate measured on more seeds (eval.sequential) says so; one look does not
    expect(lines[3]).toMatch(/\), 3 seeds \|/);
    expect(lines[2]).not.toContain('seeds');
    const byLabel = Object.fromEntries(nightsHeadlines(r).map((h: { label: string }) => [h.label, h]));
    expect(byLabel['cycles promoted of 7']).toMatchObject({ value: 6, ok: true });
    expect(byLabel['production on level-0 eval tasks']).toMatchObject({ value: 85, ok: true });
    expect(byLabel['lowest suite level']).toMatchObject({ value: 1, ok: true });
    expect(byLabel['transfer: production against base']).toMatchObject({ value: 30, ok: true });
    expect(byLabel['promoted cycles worse on a suite']).toMatchObject({ value: 0, ok: true });
  });
});
