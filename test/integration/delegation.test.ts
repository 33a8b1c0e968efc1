import { afterEach, describe, expect, it } from 'vitest';
import type {
  DelegateAggregatePayload,
  DelegatePayload,
  DelegateReturnPayload,
  PromptPayload,
  ToolPayload,
} from '../../src/orchestrator/index.js';
import {
  ancestors,
  DELEGATION,
  delegateResult,
  isPresentation,
  nested,
  payloadOf,
  runDelegation,
  taskOf,
  toolNames,
  type DelegationRun,
} from '../support/delegation.js';
import type { Script } from '../support/scripted-server.js';
import { shownLabels } from '../support/team.js';

const SUB = 'Multiply six by seven.';
let run: DelegationRun | undefined;
afterEach(async () => {
  await run?.server.close();
  run = undefined;
});

const DELEGATE_LINE = `TOOL: delegate {"task": "${SUB}"}`;

describe('delegation (scripted OpenAI-compatible server)', () => {
  it('text mode: the child orchestration answers the subtask, its answer comes back as the tool result, its spans nest under delegate', async () => {
    const script: Script = (req) => {
      const child = taskOf(req) === SUB;
      if (isPresentation(req)) return { content: child ? 'The product is 42' : 'Final answer: the product is 42' };
      const labels = shownLabels(req);
      if (child) return labels.length ? { content: 'VOTE: agent1 | right' } : { content: 'ANSWER: the product is 42' };
      if (labels.length) return { content: 'VOTE: agent1 | ok' };
      if (req.model === 'b') return { content: 'ANSWER: 41', delayMs: 1500 };
      return delegateResult(req) === undefined ? { content: DELEGATE_LINE } : { content: 'ANSWER: 42' };
    };
    run = await runDelegation(script, { delegation: DELEGATION });
    const { result, sink, server } = run;
    expect(result).toMatchObject({ status: 'completed', winner: 'a', finalAnswer: 'Final answer: the product is 42' });
    expect(result.answers.map((a) => [a.agent, a.content])).toEqual([['a', '42']]);

    // The parent's text-mode rules mention the tool; the child (at max_depth) has none and is not told of it.
    const parentA = server.requests.filter(
      (r) => r.model === 'a' && taskOf(r) === 'What is 6 x 7?' && !isPresentation(r),
    );
    expect(parentA[0]!.messages[0]!.content).toContain('TOOL: delegate {"task": "<the subtask, stated completely>"}');
    const childRequests = server.requests.filter((r) => taskOf(r) === SUB);
    expect(childRequests.length).toBe(3); // answer, vote, presentation
    for (const r of childRequests) expect(r.messages[0]!.content).not.toContain('delegate');
    expect(delegateResult(parentA[1]!)).toBe('The product is 42');

    const [delegate] = sink.named('delegate', 'coordination');
    const callingPrompt = sink.spans[delegate!.parentSeq! - 1]!;
    expect((callingPrompt.payload as PromptPayload).response!.content).toBe(DELEGATE_LINE);
    expect(payloadOf<DelegatePayload>(delegate)).toEqual({
      turn_id: (callingPrompt.payload as PromptPayload).turn_id,
      prompt_seq: callingPrompt.seq,
      agent: 'a',
      label: 'agent1',
      task: SUB,
      child_depth: 1,
      shape: 'solo',
      child_agents: ['a'],
      ordinal: 1,
    });
    const child = nested(sink, 1);
    expect(new Set(child.map((s) => s.name))).toEqual(
      new Set(['round', 'chat', 'new_answer', 'vote', 'final_selection', 'presentation']),
    );
    for (const s of child) {
      expect(s.payload).toMatchObject({ depth: 1, delegate_seq: delegate!.seq });
      expect(ancestors(sink, s)).toContain(delegate!.seq);
      expect(s.seq).toBeGreaterThan(delegate!.seq);
    }
    expect(child.filter((s) => s.name === 'new_answer').map((s) => s.agent)).toEqual(['a']);

    const [ret] = sink.named('delegate_return');
    expect(ret!.parentSeq).toBe(delegate!.seq);
    expect(payloadOf<DelegateReturnPayload>(ret)).toMatchObject({
      delegate_seq: delegate!.seq,
      child_depth: 1,
      status: 'completed',
      stopped: null,
      final_answer: 'The product is 42',
      winner_agent: 'a',
      winner_label: 'agent1',
      rounds: 2,
    });
    const childTokens = child
      .filter((s) => s.type === 'prompt')
      .reduce((n, s) => n + (s.payload as PromptPayload).usage.total_tokens, 0);
    expect(payloadOf<DelegateReturnPayload>(ret).tokens).toBe(childTokens);
    expect(sink.named('delegate', 'tool')[0]).toMatchObject({
      agent: 'a',
      parentSeq: callingPrompt.seq,
      payload: { name: 'delegate', args: { task: SUB }, result: 'The product is 42', success: true },
    });

    // The parent's final answer used every word of the child's: use 1, linked to the team's final selection.
    const [aggregate] = sink.named('delegate_aggregate');
    const [selection] = sink.spans.filter(
      (s) => s.name === 'final_selection' && !(s.payload as { depth?: number }).depth,
    );
    expect(aggregate).toMatchObject({ agent: 'a', parentSeq: selection!.seq });
    expect(payloadOf<DelegateAggregatePayload>(aggregate)).toEqual({
      winner_agent: 'a',
      presentation_seq: sink.spans.find(
        (s) => s.name === 'presentation' && s.type === 'coordination' && !(s.payload as { depth?: number }).depth,
      )!.seq,
      returns: [{ delegate_seq: delegate!.seq, return_seq: ret!.seq, agent: 'a', child_depth: 1, use: 1 }],
    });
    expect(result.delegations).toEqual([
      { agent: 'a', delegateSeq: delegate!.seq, returnSeq: ret!.seq, depth: 1, parentDelegateSeq: null, use: 1 },
    ]);

    // The child's calls count in the parent's usage.
    expect(result.usage.llmCalls).toBe(server.requests.length);
    const allTokens = sink.spans
      .filter((s) => s.type === 'prompt')
      .reduce((n, s) => n + (s.payload as PromptPayload).usage.total_tokens, 0);
    expect(result.usage.totalTokens).toBe(allTokens);
    expect(result.usage.toolCalls).toBe(1);
  });

  it("a child orchestration presents with the team's presenter prompt too", async () => {
    const script: Script = (req) => {
      const child = taskOf(req) === SUB;
      if (isPresentation(req)) return { content: child ? 'The product is 42' : 'Final answer: 42' };
      if (shownLabels(req).length) return { content: 'VOTE: agent1 | ok' };
      if (child || req.model === 'b') return { content: 'ANSWER: 42', delayMs: child ? 0 : 1500 };
      return delegateResult(req) === undefined ? { content: DELEGATE_LINE } : { content: 'ANSWER: 42' };
    };
    run = await runDelegation(script, { delegation: DELEGATION, presenterPrompt: 'Present like an editor.' });
    expect(run.result).toMatchObject({ status: 'completed', finalAnswer: 'Final answer: 42' });
    const presentations = run.server.requests.filter(isPresentation);
    expect(presentations.map(taskOf).sort()).toEqual([SUB, 'What is 6 x 7?'].sort());
    for (const p of presentations)
      expect(p.messages[0]!.content!.startsWith('Present like an editor.\n\nYour answer (agent1) was selected.')).toBe(
        true,
      );
  });

  it('native mode, team shape: a function tool beside the workflow tools; every agent joins the child team', async () => {
    const script: Script = (req) => {
      const child = taskOf(req) === SUB;
      if (isPresentation(req)) return { content: child ? 'It is 42' : 'Final answer: 42' };
      const labels = shownLabels(req);
      if (labels.length) return { toolCalls: [{ name: 'vote', arguments: { agent_id: 'agent1', reason: 'right' } }] };
      if (child)
        return req.model === 'a'
          ? { toolCalls: [{ name: 'new_answer', arguments: { content: 'seven sixes are 42' } }] }
          : { toolCalls: [{ name: 'new_answer', arguments: { content: 'x' } }], delayMs: 800 };
      if (req.model === 'b')
        return { toolCalls: [{ name: 'new_answer', arguments: { content: '41' } }], delayMs: 2000 };
      return delegateResult(req) === undefined
        ? { toolCalls: [{ name: 'delegate', arguments: { task: SUB } }] }
        : { toolCalls: [{ name: 'new_answer', arguments: { content: '42' } }] };
    };
    run = await runDelegation(script, { native: true, delegation: { ...DELEGATION, shape: 'team' } });
    const { result, sink, server } = run;
    expect(result).toMatchObject({ status: 'completed', winner: 'a', finalAnswer: 'Final answer: 42' });
    const parent = server.requests.filter((r) => taskOf(r) === 'What is 6 x 7?' && !isPresentation(r));
    expect(toolNames(parent[0]!)).toEqual(['new_answer', 'delegate']); // no answer yet: nothing to vote for
    const childRequests = server.requests.filter((r) => taskOf(r) === SUB && !isPresentation(r));
    expect(new Set(childRequests.map((r) => r.model))).toEqual(new Set(['a', 'b']));
    for (const r of childRequests) expect(toolNames(r)).not.toContain('delegate');
    const second = parent.find((r) => r.model === 'a' && delegateResult(r) !== undefined)!;
    expect(second.messages.at(-1)).toMatchObject({ role: 'tool', content: 'It is 42' });

    const [delegate] = sink.named('delegate', 'coordination');
    expect(payloadOf<DelegatePayload>(delegate)).toMatchObject({
      shape: 'team',
      child_agents: ['a', 'b'],
      child_depth: 1,
    });
    const child = nested(sink, 1);
    expect(new Set(child.filter((s) => s.name === 'vote').map((s) => s.agent))).toEqual(new Set(['a', 'b']));
    for (const s of child) expect(ancestors(sink, s)).toContain(delegate!.seq);
    // "It is 42" in "Final answer: 42": one word of three.
    expect(result.delegations![0]!.use).toBeCloseTo(1 / 3, 12);
  });

  it('answers a delegate call over max_delegations with an error result, and the agent goes on', async () => {
    const script: Script = (req) => {
      const child = taskOf(req) === SUB;
      if (isPresentation(req)) return { content: child ? 'sub answer 42' : 'Final answer: 42' };
      if (child) return shownLabels(req).length ? { content: 'VOTE: agent1 | ok' } : { content: 'ANSWER: 42' };
      if (shownLabels(req).length) return { content: 'VOTE: agent1 | ok' };
      return (delegateResult(req) ?? '').startsWith('error:') ? { content: 'ANSWER: 42' } : { content: DELEGATE_LINE };
    };
    run = await runDelegation(script, { ids: ['a'], delegation: { ...DELEGATION, maxDelegations: 2 } });
    const { result, sink } = run;
    expect(result.status).toBe('completed');
    const calls = sink.named('delegate', 'tool').map((s) => s.payload as ToolPayload);
    expect(calls.map((c) => c.success)).toEqual([true, true, false]);
    expect(calls[2]).toMatchObject({
      error: 'delegation budget spent',
      result: expect.stringMatching(
        /^error: no delegations left: this orchestration has made all 2 \(orchestrator\.delegation\.max_delegations\)/,
      ),
    });
    expect(sink.named('delegate', 'coordination').map((s) => payloadOf<DelegatePayload>(s).ordinal)).toEqual([1, 2]);
    expect(sink.named('delegate_return')).toHaveLength(2);
  });

  it('bounds the depth: a child below max_depth delegates again; at max_depth the tool is gone and a call gets an error result', async () => {
    const SUB2 = 'Add 40 and 2.';
    const script: Script = (req) => {
      const task = taskOf(req);
      if (isPresentation(req))
        return {
          content:
            task === SUB2 ? '42 from the grandchild' : task === SUB ? 'child says 42' : 'Final answer: child says 42',
        };
      if (shownLabels(req).length)
        return { toolCalls: [{ name: 'vote', arguments: { agent_id: 'agent1', reason: 'ok' } }] };
      if (delegateResult(req) !== undefined)
        return { toolCalls: [{ name: 'new_answer', arguments: { content: '42' } }] };
      return { toolCalls: [{ name: 'delegate', arguments: { task: task === 'What is 6 x 7?' ? SUB : SUB2 } }] };
    };
    run = await runDelegation(script, {
      ids: ['a'],
      native: true,
      delegation: { ...DELEGATION, maxDepth: 2, maxDelegations: 5 },
    });
    const { result, sink, server } = run;
    expect(result.status).toBe('completed');
    const byTask = (t: string) => server.requests.filter((r) => taskOf(r) === t && !isPresentation(r));
    expect(toolNames(byTask('What is 6 x 7?')[0]!)).toContain('delegate');
    expect(toolNames(byTask(SUB)[0]!)).toContain('delegate');
    expect(toolNames(byTask(SUB2)[0]!)).toEqual(['new_answer']); // no delegate at max_depth, no vote yet

    const delegates = sink.named('delegate', 'coordination');
    expect(delegates.map((s) => payloadOf<DelegatePayload>(s).child_depth)).toEqual([1, 2]);
    expect(delegates[1]!.payload).toMatchObject({ task: SUB2, depth: 1, delegate_seq: delegates[0]!.seq });
    const grandchild = nested(sink, 2);
    expect(grandchild.length).toBeGreaterThan(0);
    for (const s of grandchild) {
      expect(s.payload).toMatchObject({ delegate_seq: delegates[1]!.seq });
      expect(ancestors(sink, s)).toEqual(expect.arrayContaining([delegates[1]!.seq, delegates[0]!.seq]));
    }
    const refused = sink.named('delegate', 'tool').find((s) => (s.payload as { depth?: number }).depth === 2)!;
    expect(refused.payload).toMatchObject({
      success: false,
      error: 'depth exhausted',
      result: expect.stringContaining('max_depth is 2'),
    });
    expect(sink.named('delegate_return').map((s) => payloadOf<DelegateReturnPayload>(s).final_answer)).toEqual([
      '42 from the grandchild',
      'child says 42',
    ]);
    expect(result.delegations).toEqual([
      expect.objectContaining({ delegateSeq: delegates[0]!.seq, depth: 1, parentDelegateSeq: null, use: 1 }),
      expect.objectContaining({ delegateSeq: delegates[1]!.seq, depth: 2, parentDelegateSeq: delegates[0]!.seq }),
    ]);
    expect(result.delegations![1]!.use).toBeCloseTo(1 / 4, 12); // of "42 from the grandchild", only "42" is in "child says 42"
  });
});
