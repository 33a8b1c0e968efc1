import { describe, expect, it } from 'vitest';
import {
  auditFamilies,
  ensembleItems,
  mannWhitneyAuc,
  wilson,
  type AuditItem,
} from '../../src/evaluation/reward-audit.js';

describe('the reward audit', () => {
  it('AUC: 1 when every right answer scores above every wrong one, 0 reversed, ties half', () => {
    expect(mannWhitneyAuc([0.9, 0.8], [0.1, 0.2, 0.3])).toBe(1);
    expect(mannWhitneyAuc([0.1], [0.9, 0.8])).toBe(0);
    expect(mannWhitneyAuc([0.5, 0.5], [0.5])).toBe(0.5);
    // pairs (right, wrong): (1,0) win, (1,1) tie, (0,0) tie, (0,1) loss → (1 + 0.5 + 0.5) / 4
    expect(mannWhitneyAuc([1, 0], [0, 1])).toBe(0.5);
    expect(mannWhitneyAuc([0.7, 0.4], [0.5])).toBe(0.5);
    expect(mannWhitneyAuc([], [1])).toBeNull();
  });

  it('Wilson intervals: the textbook values, and inside [0, 1] at the ends', () => {
    const r = wilson(8, 10);
    expect(r.low).toBeCloseTo(0.4902, 3);
    expect(r.high).toBeCloseTo(0.9433, 3);
    expect(wilson(0, 5)).toMatchObject({ value: 0, low: 0 });
    expect(wilson(5, 5).high).toBe(1);
  });

  it('per family and channel: coverage of the verified answers, precision and recall at the threshold', () => {
    const item = (family: string, value: number, right: boolean): AuditItem => ({
      family,
      channel: 'turn',
      value,
      right,
    });
    const items = [
      item('peer_vote', 1, true),
      item('peer_vote', 1, false),
      item('peer_vote', 0, false),
      item('peer_vote', 0, true),
      item('judge', 1, true),
    ];
    const [judge, vote] = auditFamilies(items, { turn: 8, rollout: 0 });
    expect(judge).toMatchObject({
      family: 'judge',
      n: 1,
      right: 1,
      coverage: 1 / 8,
      auc: null,
      recall: { k: 1, n: 1 },
    });
    expect(vote).toMatchObject({ family: 'peer_vote', n: 4, right: 2, coverage: 0.5, auc: 0.5, threshold: 0.5 });
    expect(vote!.precision).toMatchObject({ k: 1, n: 2, value: 0.5 });
    expect(vote!.recall).toMatchObject({ k: 1, n: 2, value: 0.5 });
  });

  it('an ensemble scores each answer one of its members scored with the mean of their values there', () => {
    const item = (family: string, answer: string, value: number, right: boolean): AuditItem => ({
      family,
      channel: 'turn',
      value,
      right,
      answer,
    });
    const items = [
      item('judge', 'r1:3', 0.8, true),
      item('peer_vote', 'r1:3', 0.4, true),
      item('judge', 'r1:5', 0.2, false),
      item('peer_vote', 'r2:3', 1, false),
      item('agreement', 'r1:3', 1, true),
    ];
    const out = ensembleItems(items, [['judge', 'peer_vote']]);
    expect(out.map((x) => [x.family, x.answer, x.value, x.right])).toEqual([
      ['judge+peer_vote', 'r1:3', expect.closeTo(0.6, 9), true],
      ['judge+peer_vote', 'r1:5', 0.2, false],
      ['judge+peer_vote', 'r2:3', 1, false],
    ]);
    // the same answer on the other channel (its final answer) is another answer
    const final = ensembleItems([...items, { ...items[0]!, channel: 'rollout' }], [['judge', 'peer_vote']]);
    expect(final).toHaveLength(4);
  });
});
