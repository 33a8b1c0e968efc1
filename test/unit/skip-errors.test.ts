import { describe, expect, it } from 'vitest';
import { GateError, InterruptedError, isSkip, NotEnoughData, UserError } from '../../src/errors.js';

describe('what the loop records as a skipped stage (errors.isSkip)', () => {
  it('is too little data or data its gates refused; any other failure fails the cycle', () => {
    expect(isSkip(new NotEnoughData('no dpo examples: 0 completed rollout(s) yield none'))).toBe(true);
    expect(isSkip(new GateError('dataset gate min_examples failed'))).toBe(true);
    expect(isSkip(new UserError('no dpo examples, said in words'))).toBe(false);
    expect(isSkip(new InterruptedError())).toBe(false);
    expect(isSkip(new Error('boom'))).toBe(false);
  });

  it('exits 2 like any input problem, printed without a stack', () => {
    const err = new NotEnoughData('only 3 usable stop decision(s)', 'collect more');
    expect(err).toBeInstanceOf(UserError);
    expect([err.exitCode, err.hint, err.name]).toEqual([2, 'collect more', 'NotEnoughData']);
  });
});
