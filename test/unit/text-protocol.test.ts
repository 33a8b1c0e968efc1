import { describe, expect, it } from 'vitest';
import { parseTextAction } from '../../src/orchestrator/text-protocol.js';
import { jaccard, validateAction, wordSet } from '../../src/orchestrator/validate.js';

describe('text protocol', () => {
  it.each([
    ['ANSWER: 42', { kind: 'answer', content: '42' }],
    ['Let me think.\n2 + 40 = 42\nANSWER: 42', { kind: 'answer', content: '42' }],
    ['**Answer:** The result is\n42 apples', { kind: 'answer', content: 'The result is\n42 apples' }],
    ['VOTE: agent2 | it is correct', { kind: 'vote', target: 'agent2', reason: 'it is correct' }],
    ['vote - Agent 3: clearest explanation', { kind: 'vote', target: 'agent3', reason: 'clearest explanation' }],
    ['  * **VOTE**: agent_1, right answer', { kind: 'vote', target: 'agent1', reason: 'right answer' }],
    ['VOTE: agent1', { kind: 'vote', target: 'agent1', reason: '' }],
  ])('parses %j', (text, action) => {
    expect(parseTextAction(text)).toEqual({ ok: true, action });
  });

  it.each([
    ['I think the answer is 42.', 'no_action'],
    ['ANSWER: 42\nVOTE: agent1 | same', 'vote_and_answer'],
    ['VOTE: agent1 | a\nVOTE: agent2 | b', 'multiple_actions'],
    ['VOTE: the first one', 'malformed'],
    ['ANSWER:   ', 'malformed'],
  ])('rejects %j as %s', (text, kind) => {
    expect(parseTextAction(text)).toMatchObject({ ok: false, kind });
  });
});

describe('action validation', () => {
  const snap = (answers: Record<string, string>, canAnswer = true) => ({
    answers: new Map(Object.entries(answers)),
    canAnswer,
  });

  it('measures word-set overlap', () => {
    expect(jaccard(wordSet('the cat sat'), wordSet('The cat sat!'))).toBe(1);
    expect(jaccard(wordSet('a b c d'), wordSet('a b x y'))).toBeCloseTo(2 / 6);
  });

  it('rejects votes before answers and votes for unknown labels', () => {
    expect(validateAction({ kind: 'vote', target: 'agent1', reason: '' }, snap({}), 'lenient')?.kind).toBe(
      'vote_before_answer',
    );
    expect(validateAction({ kind: 'vote', target: 'agent9', reason: '' }, snap({ agent1: 'x' }), 'lenient')?.kind).toBe(
      'unknown_target',
    );
    expect(
      validateAction({ kind: 'vote', target: 'agent1', reason: '' }, snap({ agent1: 'x' }), 'lenient'),
    ).toBeUndefined();
  });

  it('rejects duplicates always and overlapping answers by novelty level', () => {
    const existing = snap({ agent1: 'The total cost is 12 dollars because 3 times 4 is 12' });
    expect(
      validateAction(
        { kind: 'answer', content: ' the total cost is 12 dollars because 3 times 4 is 12 ' },
        existing,
        'lenient',
      )?.kind,
    ).toBe('duplicate_answer');
    const similar = { kind: 'answer' as const, content: 'The total cost is 12 dollars since 3 times 4 is 12' };
    expect(validateAction(similar, existing, 'lenient')).toBeUndefined();
    expect(validateAction(similar, existing, 'balanced')?.kind).toBe('not_novel');
    const different = {
      kind: 'answer' as const,
      content: 'Each of 3 boxes costs 4 dollars, so the total is 12 dollars',
    };
    expect(validateAction(different, existing, 'balanced')).toBeUndefined();
    expect(validateAction(different, existing, 'strict')).toBeUndefined();
    expect(validateAction(different, snap({ agent1: 'x' }, false), 'lenient')?.kind).toBe('answer_limit');
  });
});

describe('implicit actions (tiny models)', () => {
  const answers = new Map([
    ['agent1', 'Each friend gets 4 cards'],
    ['agent2', 'The answer is 6'],
  ]);
  it('reads a named label or a close repeat as a vote, anything else as an answer', async () => {
    const { implicitAction } = await import('../../src/orchestrator/text-protocol.js');
    expect(implicitAction('I agree with agent2.', answers, true)).toMatchObject({
      kind: 'vote',
      target: 'agent2',
      implicit: true,
    });
    expect(implicitAction('each friend gets 4 cards!', answers, true)).toMatchObject({
      kind: 'vote',
      target: 'agent1',
    });
    expect(implicitAction('Carla has 24 cards, 24 / 6 = 4', answers, true)).toEqual({
      kind: 'answer',
      content: 'Carla has 24 cards, 24 / 6 = 4',
      implicit: true,
    });
    expect(implicitAction('Carla has 24 cards, 24 / 6 = 4', answers, false)).toMatchObject({
      kind: 'vote',
      implicit: true,
    });
    expect(implicitAction('   ', answers, true)).toBeUndefined();
    expect(implicitAction('agent9 is right', new Map(), true)).toMatchObject({ kind: 'answer' });
  });
});
