import { describe, expect, it } from 'vitest';
import type { Pair } from '../../src/evaluation/compare.js';
import { forgettingGate, levelComparisons, lowerLevels } from '../../src/evaluation/forgetting.js';
import type { EvalResult } from '../../src/store/index.js';

const BOOT = { resamples: 2000, confidence: 0.95, seed: 1 };
const RULE = { tolerance: 0.1, significance: true, minPairs: 8, alpha: 0.05 };

const result = (taskId: string, success: number): EvalResult => ({
  servingHash: 'h',
  setId: 's',
  taskHash: taskId,
  seed: 0,
  settingsHash: 'x',
  taskId,
  category: 'arithmetic/add',
  rolloutId: null,
  evalRunId: null,
  status: 'completed',
  reward: success,
  success,
  consensus: true,
  rounds: 1,
  tokens: 10,
  wallMs: 1,
});

/** n pairs of arithmetic at a level: the baseline right on all, the candidate on the first `kept`. */
const pairs = (level: number, n: number, kept: number): Pair[] =>
  Array.from({ length: n }, (_, i) => {
    const id = level === 2 ? `suite:arithmetic:1:${i}` : `suite:arithmetic@${level}:1:${i}`;
    return {
      taskId: id,
      category: 'arithmetic/add',
      seed: 0,
      baseline: result(id, 1),
      candidate: result(id, i < kept ? 1 : 0),
    };
  });

describe('no-forgetting gate', () => {
  it('refuses a candidate that regresses significantly on a level below the current one', () => {
    // Better at the current level 2, much worse at level 0.
    const all = [...pairs(0, 20, 8), ...pairs(1, 20, 20), ...pairs(2, 20, 20)];
    const rows = lowerLevels(all, { arithmetic: 2 }, BOOT);
    expect(rows.map((r) => `${r.suite}@${r.level}`)).toEqual(['arithmetic@0', 'arithmetic@1']);
    expect(rows[0]!.diff.success!.mean).toBeCloseTo(-0.6);
    expect(rows[0]!.diff.reward!.mean).toBeCloseTo(-0.6);
    const gate = forgettingGate(rows, 'success', RULE);
    expect(gate).toMatchObject({ gate: 'no_forgetting', passed: false, threshold: 0 });
    expect(gate.value).toBeCloseTo(-0.6);
    // 12 lost, none won: p = 2^-12, Holm over the 2 levels tested
    expect(gate.detail).toMatch(/2 of 2 lower level\(s\) tested, one-sided exact sign test, Holm at α 0\.05/);
    expect(gate.detail).toMatch(
      /the candidate forgot arithmetic@0 -0\.6000 \[-0\.\d+, -0\.\d+\] over 20 pair\(s\), 0 won \/ 12 lost, p 0\.000/,
    );
  });

  it('passes a loss whose CI reaches 0, and ignores the current level', () => {
    const all = [...pairs(0, 20, 19), ...pairs(1, 20, 20), ...pairs(2, 20, 0)];
    const gate = forgettingGate(lowerLevels(all, { arithmetic: 2 }, BOOT), 'success', RULE);
    expect(gate.passed).toBe(true);
    expect(gate.detail).toContain('worst arithmetic@0 -0.0500');
  });

  it('passes, saying so, when every suite is at its first level', () => {
    const gate = forgettingGate(lowerLevels(pairs(0, 10, 0), { arithmetic: 0 }, BOOT), 'success', RULE);
    expect(gate).toMatchObject({ passed: true, value: null });
    expect(gate.detail).toMatch(/every suite at its first level/);
  });

  it("compares every suite level in an evaluation, with each side's share solved beside the paired difference", () => {
    const rows = levelComparisons([...pairs(1, 10, 4), ...pairs(0, 20, 15)], BOOT);
    expect(rows.map((r) => `${r.suite}@${r.level}:${r.pairs}`)).toEqual(['arithmetic@0:20', 'arithmetic@1:10']);
    expect(rows[1]).toMatchObject({ baseline: { success: 1 }, candidate: { success: 0.4 } });
    expect(rows[1]!.diff.success!.mean).toBeCloseTo(-0.6);
    expect(levelComparisons([{ ...pairs(0, 1, 1)[0]!, taskId: 'my-task-1' }], BOOT)).toEqual([]);
  });
});
