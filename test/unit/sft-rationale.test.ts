import { describe, expect, it } from 'vitest';
import { hintLeak, hintMessage, MIN_RATIONALE_WORDS, withHint } from '../../src/pipeline/train/sft-rationale.js';

describe('the rationale filter (train.sft.rationalize)', () => {
  it('keeps a worked rationale that reaches the answer', () => {
    expect(hintLeak('6 times 7 is six sevens, so 42.\nANSWER: 42', '42')).toBeNull();
    expect(
      hintLeak('Paris has been the seat of the French government for centuries. ANSWER: Paris', 'Paris'),
    ).toBeNull();
  });

  it('drops a reply that speaks of the hint, the reference or a given answer', () => {
    for (const text of [
      'Using the hint, the product is 42. ANSWER: 42',
      'The reference says the product of six and seven is 42.',
      'Since the expected answer is 42 we multiply to check it.',
      'We are told the answer; HINTS help. ANSWER: 42',
    ])
      expect(hintLeak(text, '42'), text).toBe('mentions_hint');
  });

  it('drops a bare answer: fewer than MIN_RATIONALE_WORDS words besides the answer and its label', () => {
    expect(MIN_RATIONALE_WORDS).toBe(5);
    expect(hintLeak('ANSWER: 42', '42')).toBe('bare_answer');
    expect(hintLeak('The answer: Paris, Paris.', 'paris')).toBe('bare_answer');
    expect(hintLeak('So it is surely 42', '42')).toBe('bare_answer');
    expect(hintLeak('So it is surely then 42', '42')).toBeNull();
  });

  it('the hint joins the last user message, else comes as one of its own', () => {
    const system = { role: 'system' as const, content: 'Answer.' };
    const user = { role: 'user' as const, content: 'What is 6 x 7?' };
    const joined = withHint([system, user], '42');
    expect(joined).toHaveLength(2);
    expect(joined[1]!.content).toBe(`What is 6 x 7?\n\n${hintMessage('42').content}`);
    const tool = { role: 'tool' as const, content: 'ok', tool_call_id: 't1' };
    expect(withHint([system, user, tool], '42').at(-1)).toEqual(hintMessage('42'));
  });

  it('the hint names the reference and asks not to mention it', () => {
    const m = hintMessage('Paris');
    expect(m.role).toBe('user');
    expect(m.content).toContain('Paris');
    expect(m.content).toMatch(/do not mention this hint/);
  });
});
