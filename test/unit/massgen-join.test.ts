import { describe, expect, it } from 'vitest';
import { linkActions } from '../../src/interop/massgen/join.js';
import type { SpanInput } from '../../src/trace/records.js';

const action = (name: string, agent: string, at: number, payload: Record<string, unknown>): SpanInput => ({
  type: 'coordination',
  name,
  agent,
  startedAt: at,
  durationMs: 0,
  payload: { prompt_seq: 1, ...payload },
});
const call = (
  agent: string,
  at: number,
  tool: string | null,
  args: Record<string, unknown> = {},
  text = '',
): SpanInput => ({
  type: 'prompt',
  name: 'chat',
  agent,
  startedAt: at,
  durationMs: 100,
  payload: {
    response: {
      content: text,
      tool_calls: tool ? [{ type: 'function', function: { name: tool, arguments: JSON.stringify(args) } }] : [],
    },
  },
});

describe('MassGen actions linked to the captured calls that made them', () => {
  it('a new answer to the call of that answer, a vote to the vote call, the presentation to a plain reply', () => {
    const spans = [
      { type: 'message' as const, name: 'context', agent: 'a', startedAt: 0, payload: {} },
      action('new_answer', 'a', 2000, { content: '5' }),
      action('new_answer', 'b', 2000, { content: 'five' }),
      action('vote', 'a', 5000, { target_label: 'agent2' }),
      action('presentation', 'a', 9000, { content: 'It is 5.' }),
    ];
    const calls = [
      call('a', 900, 'new_answer', { content: 'wrong' }), // an earlier try of a, superseded
      call('b', 1000, 'new_answer', { content: 'five' }),
      call('a', 1500, 'new_answer', { content: '5' }),
      call('a', 4000, 'vote', { agent_id: 'agent2' }),
      call('a', 8000, null, {}, 'It is 5.'),
      call('b', 9500, 'vote', {}), // after everything MassGen logged: no action of its own
    ];
    const { spans: out, linked } = linkActions(spans, calls);
    expect(linked).toBe(4);
    const seqOf = (i: number) => spans.length + 1 + i;
    expect(out.map((s) => (s.payload as { prompt_seq?: number }).prompt_seq)).toEqual([
      undefined,
      seqOf(2),
      seqOf(1),
      seqOf(3),
      seqOf(4),
    ]);
    expect(out[1]!.payload).toMatchObject({ massgen_prompt_seq: 1, content: '5' });
  });

  it("an action no call made (another agent, or later than the action) keeps MassGen's context", () => {
    const spans = [action('new_answer', 'a', 1000, { content: 'x' })];
    const { spans: out, linked } = linkActions(spans, [
      call('b', 500, 'new_answer', { content: 'x' }),
      call('a', 9000, 'new_answer', { content: 'x' }),
    ]);
    expect(linked).toBe(0);
    expect(out[0]!.payload).toEqual({ prompt_seq: 1, content: 'x' });
  });
});
