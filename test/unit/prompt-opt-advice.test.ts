import { describe, expect, it } from 'vitest';
import { adviceMessages, parseAdvice, type RolloutDigest } from '../../src/prompt-opt/index.js';

const view: RolloutDigest = {
  rolloutId: 'r1',
  taskId: 't1',
  task: 'Convert 4 km to m.',
  reference: '4000',
  reward: 0,
  success: 0,
  finalAnswer: '300 m',
  winner: 'a',
  answers: [
    { agent: 'a', label: 'agent1', content: '300 m', quality: 0 },
    { agent: 'b', label: 'agent2', content: '4000 m', quality: 1 },
  ],
  votes: [
    { voter: 'b', target: 'b', targetLabel: 'agent2', reason: 'agent1 forgot to multiply by 1000', targetQuality: 1 },
  ],
  feedback: ['judge: the unit is wrong'],
};

describe('advice edits (small optimizer models)', () => {
  it("asks for one sentence from the mistakes, with the teammates' vote reasons and the feedback", () => {
    const user = adviceMessages({ name: 'p', agents: ['a'], presenter: false }, 'Solve it.', [view], [])[1]!.content;
    expect(user).toContain('Instruction: "Solve it."');
    expect(user).toContain('Expected: 4000. Answer given: 300 m.');
    expect(user).toContain('A teammate said: "agent1 forgot to multiply by 1000"');
    expect(user).toContain('Feedback: judge: the unit is wrong');
  });

  it('adds the first sentence of the reply to the prompt, and refuses unusable replies', () => {
    expect(
      parseAdvice('"Double-check the units before answering." Then more text.\nAnd more.', 'Solve it.', 2000),
    ).toEqual({
      critique: 'Double-check the units before answering.',
      prompt: 'Solve it.\nDouble-check the units before answering.',
    });
    expect(parseAdvice('   ', 'Solve it.', 2000)).toEqual({ refused: 'empty' });
    expect(parseAdvice('Use <agent1> tags.', 'Solve it.', 2000)).toEqual({ refused: 'markup' });
    expect(parseAdvice('Solve it.', 'Solve it.', 2000)).toEqual({ refused: 'unchanged' });
    expect(parseAdvice('Always state the unit of the answer.', 'x'.repeat(1990), 2000)).toEqual({
      refused: 'too_long',
    });
  });
});
