import { afterEach, describe, expect, it } from 'vitest';
import { orchestrate, type OrchestratorConfig } from '../../src/orchestrator/index.js';
import { startScriptedServer, type Script, type ScriptedServer } from '../support/scripted-server.js';
import { baseConfig, lastUser, MemorySink, noTools, team } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const TASK = 'There are 12 boxes with 5 cards in each box. How many cards are there altogether?';

async function run(script: Script, config: Partial<OrchestratorConfig>) {
  server = await startScriptedServer(script);
  const sink = new MemorySink();
  const agents = team(server.baseUrl, ['a', 'b', 'c'], { implicitAnswer: true });
  const result = await orchestrate({
    task: TASK,
    team: agents,
    config: { ...baseConfig, ...config },
    sink,
    tools: noTools,
  });
  return { result, sink, server: server! };
}

const TAG = /<\/?[A-Za-z][^>]*>|agent\d|ANSWER:|VOTE:/;

describe('prompt layouts for small models', () => {
  it('independent: each agent answers the task alone, once; the final answer most agents reached wins, with no presentation call', async () => {
    const {
      result,
      sink,
      server: s,
    } = await run(
      (req) => {
        const reply = {
          a: '12 x 5 = 60\nFinal answer: 60',
          b: 'I think it is 17.',
          c: 'Twelve boxes of five make 60 cards.',
        }[req.model as 'a' | 'b' | 'c'];
        return { content: reply, delayMs: req.model === 'a' ? 150 : 10 };
      },
      { prompt_layout: 'independent' },
    );
    expect(s.requests).toHaveLength(3);
    for (const r of s.requests) {
      expect(r.messages.map((m) => m.role)).toEqual(['system', 'user']);
      expect(r.messages[1]!.content).toBe(TASK);
      expect(r.messages[0]!.content).not.toMatch(TAG);
    }
    // b and c answered first; a's later 60 agrees with c's and counts as a vote for it.
    expect(result).toMatchObject({
      status: 'completed',
      rounds: 1,
      winner: 'c',
      finalAnswer: 'Twelve boxes of five make 60 cards.',
      consensus: true,
    });
    expect(result.answers.map((x) => x.agent).sort()).toEqual(['b', 'c']);
    expect(result.votes.map((v) => [v.voter, v.target]).sort()).toEqual([
      ['a', 'c'],
      ['b', 'b'],
      ['c', 'c'],
    ]);
    expect(sink.named('vote').find((v) => v.agent === 'a')!.payload).toMatchObject({
      target_label: 'agent3',
      reason: 'same final answer: 60',
      implicit: true,
    });
    expect(sink.named('cancel')).toHaveLength(0);
    expect(sink.named('presentation', 'prompt')).toHaveLength(0);
    expect(sink.named('presentation', 'coordination')[0]!.payload).toMatchObject({
      content: 'Twelve boxes of five make 60 cards.',
      prompt_seq: -1,
    });
  });

  it('answers: first answers are independent (never superseded); later turns see only the final answers, and repeating one votes for it', async () => {
    const {
      result,
      sink,
      server: s,
    } = await run(
      (req) => {
        const user = lastUser(req);
        if (user === TASK)
          return req.model === 'a'
            ? { content: 'Final answer: 60', delayMs: 10 }
            : { content: `So the answer is ${req.model === 'b' ? 60 : 72}.`, delayMs: 200 };
        return { content: '12 times 5 is 60. Final answer: 60' };
      },
      { prompt_layout: 'answers' },
    );
    const firsts = s.requests.filter((r) => lastUser(r) === TASK);
    expect(firsts).toHaveLength(3);
    expect(sink.named('cancel')).toHaveLength(0);
    const later = s.requests.filter((r) => lastUser(r) !== TASK);
    expect(later.length).toBeGreaterThan(0);
    for (const r of later) {
      expect(lastUser(r)).toMatch(
        /^There are 12 boxes[^]*\n\nOther solvers answered: 60(; 72)?\.\nSolve it yourself step by step\. End with "Final answer: \.\.\."$/,
      );
      expect(lastUser(r)).not.toMatch(TAG);
    }
    // b's 60 (after a's) is a vote for a; c's 72 is a new answer, which the later turns see beside 60.
    expect(later.some((r) => lastUser(r).includes('answered: 60; 72.'))).toBe(true);
    expect(result).toMatchObject({
      status: 'completed',
      winner: 'a',
      finalAnswer: 'Final answer: 60',
      consensus: true,
    });
    expect(result.votes.every((v) => v.target === 'a')).toBe(true);
    expect(sink.named('presentation', 'prompt')).toHaveLength(0);
  });

  it('answers: a reply of protocol markup only is no answer; the agent is asked again in plain words', async () => {
    const {
      result,
      sink,
      server: s,
    } = await run(
      (req) => {
        if (req.model === 'b' && req.messages.length === 2)
          return { content: '<CURRENT ANSWERS>\n<agent1>\n</CURRENT ANSWERS>' };
        return { content: 'Final answer: 60', delayMs: req.model === 'b' ? 0 : 50 };
      },
      { prompt_layout: 'independent' },
    );
    expect(sink.named('invalid_action')[0]).toMatchObject({
      agent: 'b',
      payload: expect.objectContaining({ kind: 'no_action', detail: 'the reply holds only protocol markup' }),
    });
    const retry = s.requests.find((r) => r.model === 'b' && r.messages.length === 4)!;
    expect(lastUser(retry)).toBe(
      'Your reply has no answer. Solve the task step by step and end with "Final answer: ..."',
    );
    expect(result.answers.every((x) => !/<[A-Z]/.test(x.content))).toBe(true);
    expect(result).toMatchObject({ status: 'completed', finalAnswer: 'Final answer: 60' });
  });

  it('protocol: markup copied into an answer is never stored; an answer of markup only is refused', async () => {
    const { result, sink } = await run((req) => {
      const user = lastUser(req);
      if ((req.messages[0]?.content ?? '').includes('was selected')) return { content: 'Final answer: 60' };
      if (user.includes('<agent')) return { content: 'VOTE: agent1 | right' };
      if (req.model === 'a') return { content: '<CURRENT ANSWER>\n<c>60</c>', delayMs: 150 };
      return { content: '<BIGGER ANSWER>\n</BIGGER ANSWER>' };
    }, {});
    expect(result.answers[0]).toMatchObject({ agent: 'a', content: '60' });
    expect(result.answers.every((x) => !/[<>]/.test(x.content))).toBe(true);
    expect(
      sink
        .named('invalid_action')
        .some((s) => (s.payload as { detail: string }).detail.startsWith('the answer holds only protocol markup')),
    ).toBe(true);
  });
});
