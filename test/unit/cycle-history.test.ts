import { describe, expect, it } from 'vitest';
import { headroomOf } from '../../src/datasets/headroom.js';
import { headroomLine, suiteCell, suiteSuccess } from '../../src/report/cycle-history.js';
import type { StoredLevel } from '../../src/report/summary.js';

const level = (suite: string, lv: number, production: number, candidate: number): StoredLevel => ({
  suite,
  level: lv,
  pairs: 10,
  baseline: { reward: null, success: production },
  candidate: { reward: null, success: candidate },
});

describe('the cycle history', () => {
  const levels = [level('vocab', 0, 0.9, 0.95), level('vocab', 1, 0.4, 0.6), level('arithmetic', 0, 0.3, 0.2)];

  it("takes each suite at the curriculum's level, else the highest evaluated, in name order", () => {
    expect(suiteSuccess(levels, undefined, false).map((s) => [s.suite, s.level])).toEqual([
      ['arithmetic', 0],
      ['vocab', 1],
    ]);
    expect(suiteSuccess(levels, { vocab: 0, arithmetic: 0 }, false).map((s) => [s.suite, s.level])).toEqual([
      ['arithmetic', 0],
      ['vocab', 0],
    ]);
  });

  it('counts production after the cycle as the candidate only when it was promoted', () => {
    expect(suiteSuccess(levels, undefined, true).map((s) => s.after)).toEqual([0.2, 0.6]);
    expect(suiteSuccess(levels, undefined, false).map((s) => s.after)).toEqual([0.3, 0.4]);
    const [arith] = suiteSuccess(levels, undefined, true);
    expect(suiteCell(arith, true)).toBe('L0 30 % → 20 %');
    expect(suiteCell(arith, false)).toBe('L0 30 %');
    expect(suiteCell(undefined, false)).toBe('—');
  });

  it('classes a task by its verified answers: never, sometimes or always right', () => {
    expect(headroomOf({ answers: 6, right: 0 })).toBe('never');
    expect(headroomOf({ answers: 6, right: 1 })).toBe('sometimes');
    expect(headroomOf({ answers: 6, right: 6 })).toBe('always');
    expect(headroomLine({ tasks: 5, never: 2, sometimes: 2, always: 1, answers: 30 })).toBe(
      'never 2 · sometimes 2 · always 1',
    );
    expect(headroomLine({ tasks: 5, never: 2, sometimes: 2, always: 1, answers: 30 }, true)).toBe('2/2/1');
    expect(headroomLine(null)).toBe('—');
  });
});
