import { afterEach, describe, expect, it } from 'vitest';
import type {
  DelegateAggregatePayload,
  DelegateReturnPayload,
  PromptPayload,
  ToolRunner,
} from '../../src/orchestrator/index.js';
import {
  DELEGATION,
  delegateResult,
  isPresentation,
  nested,
  payloadOf,
  runDelegation,
  taskOf,
  type DelegationRun,
} from '../support/delegation.js';
import type { Script } from '../support/scripted-server.js';
import { shownLabels, type MemorySink } from '../support/team.js';

const SUB = 'Multiply six by seven.';
const DELEGATE_LINE = `TOOL: delegate {"task": "${SUB}"}`;
const runs: DelegationRun[] = [];
afterEach(async () => {
  await Promise.all(runs.splice(0).map((r) => r.server.close()));
});

describe('delegation limits', () => {
  it('stops a child over max_child_tokens: the call that crossed it still acts, later calls are cancelled, the child presents what it has', async () => {
    const script: Script = (req) => {
      const child = taskOf(req) === SUB;
      if (isPresentation(req)) return { content: child ? 'never sent' : 'Final answer: 42' };
      const labels = shownLabels(req);
      if (child)
        return req.model === 'a' && !labels.length
          ? { content: 'ANSWER: 42 by the sub-team', usage: { prompt_tokens: 30, completion_tokens: 10 } }
          : { hang: true };
      if (labels.length) return { content: 'VOTE: agent1 | ok' };
      if (req.model === 'b') return { content: 'ANSWER: 41', delayMs: 3000 };
      return delegateResult(req) === undefined ? { content: DELEGATE_LINE } : { content: 'ANSWER: 42' };
    };
    const run = await runDelegation(script, { delegation: { ...DELEGATION, shape: 'team', maxChildTokens: 30 } });
    runs.push(run);
    const { result, sink } = run;
    expect(result.status).toBe('completed');
    const [ret] = sink.named('delegate_return');
    expect(payloadOf<DelegateReturnPayload>(ret)).toMatchObject({
      status: 'completed',
      stopped: 'token_budget',
      final_answer: '42 by the sub-team',
      winner_agent: 'a',
      tokens: 40,
    });
    expect(sink.named('delegate', 'tool')[0]!.payload).toMatchObject({ success: true, result: '42 by the sub-team' });
    // Only the crossing call got a response; every other child call (b's, a's next turn, the presentation) was cancelled.
    const childPrompts = nested(sink, 1)
      .filter((s) => s.type === 'prompt')
      .map((s) => s.payload as PromptPayload);
    expect(childPrompts.filter((p) => p.response !== null)).toHaveLength(1);
    expect(childPrompts.filter((p) => p.cancelled).length).toBeGreaterThanOrEqual(2);
    expect(
      nested(sink, 1)
        .filter((s) => s.name === 'new_answer')
        .map((s) => s.agent),
    ).toEqual(['a']);
  });

  it('cancels the running child when the parent is interrupted', async () => {
    const ac = new AbortController();
    let childStarted: () => void;
    const started = new Promise<void>((resolve) => (childStarted = resolve));
    const script: Script = (req) => {
      if (taskOf(req) === SUB) {
        childStarted();
        return { hang: true };
      }
      return { content: DELEGATE_LINE };
    };
    const pending = runDelegation(script, { ids: ['a'], delegation: DELEGATION, signal: ac.signal });
    await started;
    ac.abort();
    const run = await pending;
    runs.push(run);
    const { result, sink, server } = run;
    expect(result.status).toBe('cancelled');
    expect(payloadOf<DelegateReturnPayload>(sink.named('delegate_return')[0])).toMatchObject({
      status: 'cancelled',
      final_answer: null,
    });
    const childPrompts = nested(sink, 1).filter((s) => s.type === 'prompt');
    expect(childPrompts.map((s) => (s.payload as PromptPayload).cancelled)).toEqual([true]);
    await new Promise((r) => setTimeout(r, 50));
    expect(server.aborted.some((r) => taskOf(r) === SUB)).toBe(true);
    expect(payloadOf<DelegateAggregatePayload>(sink.named('delegate_aggregate')[0]).returns.map((r) => r.use)).toEqual([
      0,
    ]);
  });

  it('with delegation off (absent, null or not enabled) the team runs exactly as before: same requests, same spans', async () => {
    const calculator: ToolRunner = { run: async () => ({ result: '42', success: true }) };
    const scripts: Record<'text' | 'native', Script> = {
      text: (req) => {
        if (isPresentation(req)) return { content: 'Final answer: 42' };
        if (shownLabels(req).length) return { content: 'VOTE: agent1 | ok' };
        return req.model === 'a' ? { content: 'ANSWER: 42' } : { content: 'ANSWER: 41', delayMs: 400 };
      },
      native: (req) => {
        if (isPresentation(req)) return { content: 'Final answer: 42' };
        if (shownLabels(req).length)
          return { toolCalls: [{ name: 'vote', arguments: { agent_id: 'agent1', reason: 'ok' } }] };
        if (req.model === 'b')
          return { toolCalls: [{ name: 'new_answer', arguments: { content: '41' } }], delayMs: 400 };
        return req.messages.some((m) => m.role === 'tool')
          ? { toolCalls: [{ name: 'new_answer', arguments: { content: '42' } }] }
          : { toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }] };
      },
    };
    for (const mode of ['text', 'native'] as const) {
      const observe = async (delegation: typeof DELEGATION | null | undefined) => {
        const run = await runDelegation(scripts[mode], {
          native: mode === 'native',
          delegation,
          tools: calculator,
          agent: { tools: [{ name: 'calculator', description: 'math', parameters: { type: 'object' } }] },
        });
        runs.push(run);
        return {
          requests: run.server.requests
            .map((r) => JSON.stringify({ model: r.model, messages: r.messages, tools: r.tools }))
            .sort(),
          spans: normalized(run.sink),
        };
      };
      const before = await observe(undefined);
      expect(before.requests.join('\n')).not.toContain('delegate');
      expect(await observe(null)).toEqual(before);
      expect(await observe({ ...DELEGATION, enabled: false })).toEqual(before);
      // The comparison sees the tool when it is on.
      const on = await observe(DELEGATION);
      expect(on.requests.join('\n')).toContain('delegate');
      expect(on.requests).not.toEqual(before.requests);
    }
  });
});

/** Spans without their timings, sorted (concurrent agents may interleave). */
function normalized(sink: MemorySink): string[] {
  return sink.spans
    .map(({ startedAt: _s, durationMs: _d, payloadJson: _j, payload, ...rest }) => {
      const { latency_ms: _l, ...p } = (payload ?? {}) as Record<string, unknown>;
      return JSON.stringify({ ...rest, payload: p });
    })
    .sort();
}
