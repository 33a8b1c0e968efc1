import { describe, expect, it } from 'vitest';
import { calculate } from '../../src/tools/calculator.js';

describe('calculator', () => {
  it.each([
    ['6*7', 42],
    ['2 + 3 * 4', 14],
    ['(2 + 3) * 4', 20],
    ['2^3^2', 512],
    ['-3 + 10 / 4', -0.5],
    ['17 % 5', 2],
    ['1.5e2 - 50', 100],
    ['12 × 3 ÷ 4', 9],
  ])('%s = %d', (e, v) => {
    expect(calculate(e)).toBe(v);
  });
  it.each([
    ['', 'empty'],
    ['2 +', 'unexpected'],
    ['1 / 0', 'division by zero'],
    ['process.exit()', 'unexpected'],
    ['(1', 'expected ")"'],
  ])('rejects %j', (e, msg) => {
    expect(() => calculate(e)).toThrow(msg);
  });
});
