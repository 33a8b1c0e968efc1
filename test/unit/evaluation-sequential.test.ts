import { describe, expect, it } from 'vitest';
import { boundaries, confidenceAt, spent, upperQuantile } from '../../src/evaluation/sequential.js';
import { Rng } from '../../src/tasks/prng.js';

describe('group-sequential boundaries (eval.sequential)', () => {
  it('one look is the single test: z 1.96 for one-sided 0.025, a 95 % interval', () => {
    for (const s of ['obrien_fleming', 'pocock'] as const) {
      const [b] = boundaries(0.025, 1, s);
      expect(b).toBeCloseTo(1.96, 2);
      expect(confidenceAt(b!)).toBeCloseTo(0.95, 3);
    }
  });

  it('matches the published Lan–DeMets boundaries for two and three looks (one-sided 0.025)', () => {
    // O'Brien–Fleming-type and Pocock-type spending, equally spaced looks (as tabulated by gsDesign's sfLDOF/sfLDPocock)
    expect(boundaries(0.025, 2, 'obrien_fleming').map((b) => +b.toFixed(2))).toEqual([2.96, 1.97]);
    expect(boundaries(0.025, 3, 'obrien_fleming').map((b) => +b.toFixed(2))).toEqual([3.71, 2.51, 1.99]);
    expect(boundaries(0.025, 2, 'pocock').map((b) => +b.toFixed(2))).toEqual([2.16, 2.2]);
  });

  it('spends exactly alpha at the last look, and the looks together cross with probability alpha (simulated)', () => {
    expect(spent(0.025, 1, 'obrien_fleming')).toBe(0.025);
    expect(upperQuantile(0.025)).toBeCloseTo(1.95996, 4);
    const rng = new Rng(11);
    const gauss = () => Math.sqrt(-2 * Math.log(rng.next() || 1e-12)) * Math.cos(2 * Math.PI * rng.next());
    for (const s of ['obrien_fleming', 'pocock'] as const) {
      const looks = 3;
      const b = boundaries(0.025, looks, s);
      const runs = 100_000;
      let crossed = 0;
      for (let r = 0; r < runs; r++) {
        let sum = 0;
        for (let k = 1; k <= looks; k++) {
          sum += gauss();
          if (sum / Math.sqrt(k) > b[k - 1]!) {
            crossed++;
            break;
          }
        }
      }
      // 100 000 runs: the standard error of a 0.025 rate is 0.0005
      expect(Math.abs(crossed / runs - 0.025)).toBeLessThan(0.0016);
    }
  });
});
