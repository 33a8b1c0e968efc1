// The roles benchmark's verdict (bench/lib/roles-report.mjs): whether per-role adapters beat one shared adapter,
// read from the paired (b) − (a) interval, and which roles' own effects have their CI above 0.
import { describe, expect, it } from 'vitest';
// @ts-expect-error bench/ is plain ESM JavaScript without type declarations
import { verdict } from '../../bench/lib/roles-report.mjs';

const diff = (mean: number, low: number, high: number) => ({ success: { diff: { mean, low, high } } });
const results = (bVsA: unknown, ownLows: Record<string, number>) => ({
  bVsA: bVsA && { pairs: 40, ...(bVsA as object) },
  arms: { b: { roles: Object.entries(ownLows).map(([role, low]) => ({ role, ownEffect: diff(0.1, low, 0.3) })) } },
});

describe('roles benchmark verdict', () => {
  it('(b) beats (a) when the interval lies above 0; the target needs a role whose own effect does too', () => {
    const v = verdict(results(diff(0.1, 0.025, 0.2), { answerer: 0.05, checkers: 0 }));
    expect(v).toMatchObject({ bAtLeastA: true, bBeatsA: true, rolesAboveZero: ['answerer'], targetMet: true });
    expect(v.text).toMatch(/^\(b\) per-role adapters beat \(a\) one shared adapter: \+10\.0 \[\+2\.5, \+20\.0\]/);
  });

  it('an interval across 0 is no win, whichever way the mean falls', () => {
    expect(verdict(results(diff(0.05, -0.05, 0.15), { answerer: 0 }))).toMatchObject({
      bAtLeastA: true,
      bBeatsA: false,
      rolesAboveZero: [],
      targetMet: false,
    });
    const worse = verdict(results(diff(-0.1, -0.2, -0.025), { answerer: 0.05 }));
    expect(worse).toMatchObject({ bAtLeastA: false, bBeatsA: false, targetMet: false });
    expect(worse.text).toContain('did significantly worse than');
  });

  it('says so when (b) was not compared with (a)', () => {
    expect(verdict(results(null, {}))).toMatchObject({ bAtLeastA: null, targetMet: null });
  });
});
