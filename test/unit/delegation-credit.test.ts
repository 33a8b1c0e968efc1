import { describe, expect, it } from 'vitest';
import { answerUse } from '../../src/orchestrator/delegation.js';
import { creditOutcome, delegationCredit, delegationsFromSpans } from '../../src/rewards/delegation-credit.js';

describe('delegation credit', () => {
  it("use is the share of the returned answer's words found in the final answer", () => {
    expect(answerUse('The product is 42', 'Final answer: the product is 42.')).toBe(1);
    expect(answerUse('It is 42', 'Final answer: 42')).toBeCloseTo(1 / 3, 12);
    expect(answerUse('blue', 'Final answer: 42')).toBe(0);
    expect(answerUse('42', null)).toBe(0);
    expect(answerUse(null, '42')).toBe(0);
    expect(answerUse('...', '42')).toBe(0);
  });

  it('multiplies the uses up the chain of delegations by the verified quality, else the total', () => {
    const records = [
      { agent: 'a', delegateSeq: 4, returnSeq: 30, depth: 1, parentDelegateSeq: null, use: 0.5 },
      { agent: 'b', delegateSeq: 9, returnSeq: 20, depth: 2, parentDelegateSeq: 4, use: 0.5 },
      { agent: 'a', delegateSeq: 40, returnSeq: 50, depth: 1, parentDelegateSeq: null, use: 0 },
    ];
    const rows = delegationCredit(records, { byFamily: { exact: 0, numeric: 0.8, coordination: 3 }, total: 5 });
    expect(rows.map((r) => [r.agent, r.targetSeq, r.channel, r.family])).toEqual([
      ['a', 4, 'turn', 'delegation'],
      ['b', 9, 'turn', 'delegation'],
      ['a', 40, 'turn', 'delegation'],
    ]);
    expect(rows[0]!.value).toBeCloseTo(0.4, 12);
    expect(rows[1]!.value).toBeCloseTo(0.2, 12);
    expect(rows[1]!.reason).toBe(
      'use 0.5 of the returned answer × 0.5 (the uses of the enclosing delegations) × outcome 0.8 (verified quality)',
    );
    expect(rows[2]!.value).toBe(0);
    expect(creditOutcome({ byFamily: { coordination: 3 }, total: 0.6 })).toEqual({
      value: 0.6,
      source: 'total reward',
    });
    expect(delegationCredit(records.slice(0, 1), { byFamily: { judge: 1 }, total: -2 })[0]!.value).toBe(-1);
    // A delegation whose enclosing level never aggregated (no record) gets nothing.
    expect(delegationCredit([records[1]!], { byFamily: { exact: 1 }, total: 1 })[0]!.value).toBe(0);
    expect(delegationCredit([], { byFamily: { exact: 1 }, total: 1 })).toEqual([]);
  });

  it('reads the same records back from stored delegate_aggregate spans', () => {
    const spans = [
      {
        type: 'coordination',
        name: 'delegate_aggregate',
        payload: {
          winner_agent: 'b',
          presentation_seq: 25,
          returns: [{ delegate_seq: 9, return_seq: 20, agent: 'b', child_depth: 2, use: 0.5 }],
          depth: 1,
          delegate_seq: 4,
        },
      },
      {
        type: 'coordination',
        name: 'delegate_aggregate',
        payload: {
          winner_agent: 'a',
          presentation_seq: 60,
          returns: [{ delegate_seq: 4, return_seq: 30, agent: 'a', child_depth: 1, use: 0.5 }],
        },
      },
      { type: 'coordination', name: 'delegate', payload: {} },
    ];
    expect(delegationsFromSpans(spans)).toEqual([
      { agent: 'a', delegateSeq: 4, returnSeq: 30, depth: 1, parentDelegateSeq: null, use: 0.5 },
      { agent: 'b', delegateSeq: 9, returnSeq: 20, depth: 2, parentDelegateSeq: 4, use: 0.5 },
    ]);
  });
});
