import { afterEach, describe, expect, it } from 'vitest';
import { createLlmClient } from '../../src/llm/client.js';
import { orchestrate, type OrchestratorConfig, type ToolRunner } from '../../src/orchestrator/index.js';
import { startScriptedServer, type Script, type ScriptedServer } from '../support/scripted-server.js';
import { baseConfig, lastUser, MemorySink, noTools, shownLabels, team } from '../support/team.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function run(
  script: Script,
  opts: {
    ids?: string[];
    config?: Partial<OrchestratorConfig>;
    tools?: ToolRunner;
    native?: boolean;
    implicit?: boolean;
    signal?: AbortSignal;
    presenterPrompt?: string;
    stream?: boolean;
  } = {},
) {
  server = await startScriptedServer(script);
  const sink = new MemorySink();
  const client = opts.stream
    ? {
        client: createLlmClient({
          baseUrl: server.baseUrl,
          timeoutMs: 5000,
          maxRetries: 0,
          logprobs: true,
          stream: true,
        }),
      }
    : {};
  const agents = team(
    server.baseUrl,
    opts.ids ?? ['a', 'b', 'c'],
    opts.native
      ? {
          toolMode: 'native',
          tools: opts.tools ? [{ name: 'calculator', description: 'math', parameters: { type: 'object' } }] : [],
          ...client,
        }
      : { implicitAnswer: opts.implicit ?? false, ...client },
  );
  const result = await orchestrate({
    task: 'What is 6 x 7?',
    team: agents,
    config: { ...baseConfig, ...opts.config },
    sink,
    tools: opts.tools ?? noTools,
    signal: opts.signal,
    ...(opts.presenterPrompt === undefined ? {} : { presenterPrompt: opts.presenterPrompt }),
  });
  return { result, sink, server: server! };
}

const isPresentation = (req: { messages: { content: string | null }[] }) =>
  (req.messages[0]?.content ?? '').includes('was selected');

describe('orchestrator (scripted OpenAI-compatible server)', () => {
  it('cancels superseded work when a new answer arrives, and reaches consensus', async () => {
    const {
      result,
      sink,
      server: s,
    } = await run((req) => {
      if (isPresentation(req)) return { content: 'Final answer: 42' };
      const labels = shownLabels(req);
      if (!labels.length)
        return req.model === 'a' ? { content: 'ANSWER: 42', delayMs: 20 } : { content: 'ANSWER: 41', delayMs: 400 };
      return { content: 'VOTE: agent1 | 6 times 7 is 42' };
    });
    expect(result).toMatchObject({
      status: 'completed',
      winner: 'a',
      winnerLabel: 'agent1',
      finalAnswer: 'Final answer: 42',
      consensus: true,
      rounds: 2,
    });
    expect(result.labels).toEqual({ a: 'agent1', b: 'agent2', c: 'agent3' });
    expect(result.answers).toEqual([expect.objectContaining({ agent: 'a', label: 'agent1', content: '42', round: 1 })]);
    expect(result.votes.map((v) => [v.voter, v.target])).toEqual(
      expect.arrayContaining([
        ['a', 'a'],
        ['b', 'a'],
        ['c', 'a'],
      ]),
    );
    expect(sink.named('cancel').map((c) => [c.agent, (c.payload as { reason: string }).reason])).toEqual([
      ['b', 'superseded'],
      ['c', 'superseded'],
    ]);
    await new Promise((r) => setTimeout(r, 50));
    expect(s.aborted.map((r) => r.model).sort()).toEqual(['b', 'c']);
    const cancelledPrompts = sink.named('chat').filter((p) => (p.payload as { cancelled?: boolean }).cancelled);
    expect(cancelledPrompts.map((p) => p.agent).sort()).toEqual(['b', 'c']);
    const vote = sink.named('vote').find((v) => v.agent === 'b')!.payload as Record<string, unknown>;
    expect(vote).toMatchObject({
      voter_label: 'agent2',
      target_label: 'agent1',
      target_agent: 'a',
      reason: '6 times 7 is 42',
      round: 2,
      answer_labels_seen: ['agent1'],
    });
    expect(sink.named('final_selection')[0]!.payload).toMatchObject({
      winner_agent: 'a',
      votes: { agent1: 3 },
      consensus: true,
      reason: 'votes',
    });
    expect(sink.named('presentation', 'coordination')[0]!.payload).toMatchObject({ content: 'Final answer: 42' });
    expect(sink.named('presentation', 'prompt')[0]!.agent).toBe('a');
    const prompt = sink.named('chat')[0]!.payload as Record<string, any>;
    expect(prompt.request.messages[1].content).toContain('<ORIGINAL MESSAGE>\nWhat is 6 x 7?');
    expect(prompt.logprobs.length).toBeGreaterThan(0);
    expect(prompt.token_ids.length).toBeGreaterThan(0);
    expect(result.usage.llmCalls).toBe(s.requests.length);
  });

  it("presents with the presenter prompt in place of the winner's system prompt; every other call keeps the agent's own", async () => {
    const script: Script = (req) => {
      if (isPresentation(req)) return { content: 'Final answer: 42' };
      if ((req.messages[0]?.content ?? '').startsWith('Check the final answer')) return { content: 'CONFIRM' };
      return shownLabels(req).length
        ? { content: 'VOTE: agent1 | right' }
        : req.model === 'a'
          ? { content: 'ANSWER: 42' }
          : { content: 'ANSWER: 42', delayMs: 300 };
    };
    const presenterPrompt = "You present the team's result to a busy reader: one short paragraph.";
    const {
      result,
      sink,
      server: s,
    } = await run(script, { presenterPrompt, config: { max_orchestration_restarts: 1 } });
    expect(result).toMatchObject({ status: 'completed', winner: 'a', finalAnswer: 'Final answer: 42' });
    const presentations = s.requests.filter(isPresentation);
    expect(presentations).toHaveLength(1);
    const system = presentations[0]!.messages[0]!;
    expect(system.role).toBe('system');
    expect(system.content!.startsWith(`${presenterPrompt}\n\nYour answer (agent1) was selected.`)).toBe(true);
    expect(system.content).not.toContain('You solve tasks.');
    // The recorded presentation prompt is what was sent.
    expect(
      (sink.named('presentation', 'prompt')[0]!.payload as { request: { messages: { content: string }[] } }).request
        .messages[0]!.content,
    ).toBe(system.content);
    for (const r of s.requests.filter((r) => !isPresentation(r))) {
      expect(r.messages[0]!.content!.startsWith('You solve tasks.')).toBe(true);
      expect(r.messages[0]!.content).not.toContain(presenterPrompt);
    }
    // The review after the presentation is the winner's own (max_orchestration_restarts: 1).
    expect(
      s.requests.some((r) => r.messages[0]!.content!.startsWith('You solve tasks.\n\nCheck the final answer')),
    ).toBe(true);

    // Without one, the winner presents with its own system prompt, as before.
    await server!.close();
    const plain = await run(script);
    expect(
      plain.server.requests
        .filter(isPresentation)[0]!
        .messages[0]!.content!.startsWith('You solve tasks.\n\nYour answer (agent1) was selected.'),
    ).toBe(true);
  });

  it('resets every vote when a new answer arrives and everyone revotes on the new set', async () => {
    const { result, sink } = await run((req) => {
      if (isPresentation(req)) return { content: 'Final: 42' };
      const labels = shownLabels(req);
      if (!labels.length)
        return req.model === 'a' ? { content: 'ANSWER: 42' } : { content: 'ANSWER: x', delayMs: 1000 };
      if (req.model === 'c' && labels.length === 1)
        return { content: 'ANSWER: 6 x 7 = 42, because 6 x 7 is 42', delayMs: 150 };
      return { content: labels.length === 2 ? 'VOTE: agent3 | explains it' : 'VOTE: agent1 | right' };
    });
    expect(result.answers.map((a) => a.label)).toEqual(['agent1', 'agent3']);
    const votes = sink
      .named('vote')
      .map((v) => [
        (v.payload as { round: number }).round,
        v.agent,
        (v.payload as { target_label: string }).target_label,
      ]);
    expect(votes.filter(([round]) => round === 2).length).toBeGreaterThan(0);
    expect(result.votes.every((v) => v.target === 'c' && v.round === 3)).toBe(true);
    expect(result).toMatchObject({ winner: 'c', consensus: true, rounds: 3 });
  });

  it('breaks vote ties by registration order', async () => {
    const { result } = await run(
      (req) => {
        if (isPresentation(req)) return { content: 'done' };
        const labels = shownLabels(req);
        if (labels.length < 2)
          return req.model === 'b'
            ? { content: 'ANSWER: 42', delayMs: 10 }
            : req.model === 'a' && labels.length === 1
              ? { content: 'ANSWER: forty-two', delayMs: 10 }
              : { content: 'ANSWER: 6*7', delayMs: 500 };
        return {
          content:
            req.model === 'a' ? 'VOTE: agent1 | mine' : req.model === 'b' ? 'VOTE: agent2 | mine' : 'VOTE: agent2 | b',
        };
      },
      { ids: ['a', 'b', 'c', 'd'].slice(0, 3) },
    );
    expect(result.answers.map((a) => a.agent)).toEqual(['b', 'a']);
    expect(result.winner).toBe('b');
  });

  it('corrects invalid actions, then drops an agent that keeps failing while the rest finish', async () => {
    const { result, sink } = await run(
      (req) => {
        if (isPresentation(req)) return { content: 'Final: 42' };
        const labels = shownLabels(req);
        if (req.model === 'c') return { content: 'I am not sure what to do.' };
        if (req.model === 'b' && !lastUser(req).includes('not a valid action'))
          return { content: 'VOTE: agent1 | early' };
        if (!labels.length)
          return req.model === 'a' ? { content: 'ANSWER: 42', delayMs: 60 } : { content: 'ANSWER: 43', delayMs: 300 };
        return { content: 'VOTE: agent1 | ok' };
      },
      { config: { max_action_retries: 2 } },
    );
    const invalid = sink.named('invalid_action').map((s) => [s.agent, (s.payload as { kind: string }).kind]);
    expect(invalid).toContainEqual(['b', 'vote_before_answer']);
    expect(invalid.filter(([agent]) => agent === 'c').map(([, kind]) => kind)).toEqual([
      'no_action',
      'no_action',
      'no_action',
    ]);
    expect(result.dropped).toEqual([
      { agent: 'c', kind: 'invalid_actions', reason: 'no valid action after 3 attempts' },
    ]);
    expect(result).toMatchObject({ status: 'completed', winner: 'a', consensus: true });
    const correction = sink
      .named('chat')
      .find((p) => p.agent === 'b' && JSON.stringify(p.payload).includes('there are no answers to vote for yet'));
    expect(correction).toBeDefined();
  });

  it('rejects unknown targets, duplicates, non-novel answers and answers past the limit', async () => {
    const { sink, result } = await run(
      (req) => {
        if (isPresentation(req)) return { content: 'Final: 42' };
        const labels = shownLabels(req);
        const corrected = lastUser(req).includes('not a valid action');
        if (!labels.length)
          return req.model === 'a'
            ? { content: 'ANSWER: The product of six and seven is 42' }
            : { content: 'ANSWER: 1', delayMs: 500 };
        if (req.model === 'b') return corrected ? { content: 'VOTE: agent1 | ok' } : { content: 'VOTE: agent7 | who' };
        if (req.model === 'c')
          return corrected
            ? { content: 'VOTE: agent1 | ok' }
            : { content: 'ANSWER: the product of six and seven is 42' };
        return corrected
          ? { content: 'VOTE: agent1 | ok' }
          : { content: 'ANSWER: The product of six and seven is surely 42' };
      },
      { config: { answer_novelty_requirement: 'balanced', max_new_answers_per_agent: 1 } },
    );
    const kinds = Object.fromEntries(
      sink.named('invalid_action').map((s) => [s.agent, (s.payload as { kind: string }).kind]),
    );
    expect(kinds).toEqual({ a: 'answer_limit', b: 'unknown_target', c: 'duplicate_answer' });
    expect(result).toMatchObject({ winner: 'a', consensus: true });
    const { sink: strict } = await run(
      (req) => {
        if (isPresentation(req)) return { content: 'x' };
        if (!shownLabels(req).length)
          return req.model === 'a'
            ? { content: 'ANSWER: six times seven gives 42 exactly' }
            : { content: 'ANSWER: 1', delayMs: 500 };
        return lastUser(req).includes('not a valid action') || req.model === 'a'
          ? { content: 'VOTE: agent1 | ok' }
          : { content: 'ANSWER: six times seven gives 42' };
      },
      { config: { answer_novelty_requirement: 'strict' } },
    );
    expect(strict.named('invalid_action').map((s) => (s.payload as { kind: string }).kind)).toEqual([
      'not_novel',
      'not_novel',
    ]);
  });

  it('drops an agent that times out and finishes with the others', async () => {
    const { result, sink } = await run(
      (req) => {
        if (isPresentation(req)) return { content: 'Final: 42' };
        if (req.model === 'c') return { hang: true };
        return shownLabels(req).length
          ? { content: 'VOTE: agent1 | ok' }
          : req.model === 'a'
            ? { content: 'ANSWER: 42' }
            : { content: 'ANSWER: 40', delayMs: 200 };
      },
      { config: { agent_timeout_s: 0.5 } },
    );
    expect(result.dropped).toEqual([
      { agent: 'c', kind: 'timeout', reason: 'no action within agent_timeout_s (0.5 s)' },
    ]);
    expect(result).toMatchObject({ status: 'completed', winner: 'a', consensus: true });
    expect(sink.named('drop')[0]).toMatchObject({ agent: 'c', payload: { kind: 'timeout' } });
  });

  it('stops at the total timeout, cancelling running calls, and picks the first answer without votes', async () => {
    const { result, sink } = await run(
      (req) => {
        if (isPresentation(req)) return { content: 'Final: 42' };
        return shownLabels(req).length
          ? { hang: true }
          : req.model === 'a'
            ? { content: 'ANSWER: 42' }
            : { hang: true };
      },
      { config: { total_timeout_s: 0.4 } },
    );
    expect(result).toMatchObject({
      status: 'completed',
      timedOut: true,
      winner: 'a',
      consensus: false,
      finalAnswer: '42',
    });
    expect(sink.named('cancel').map((c) => (c.payload as { reason: string }).reason)).toContain('total_timeout');
    expect(sink.named('final_selection')[0]!.payload).toMatchObject({ reason: 'no_votes', consensus: false });
  });

  it('fails cleanly when nobody answers', async () => {
    const { result } = await run(() => ({ content: 'hmm' }), { config: { max_action_retries: 0 } });
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(/^no answers: a dropped \(no valid action after 1 attempts\)/);
  });

  it('lets the winner restart with feedback, up to max_orchestration_restarts', async () => {
    let reviews = 0;
    const { result, sink } = await run(
      (req) => {
        const system = req.messages[0]?.content ?? '';
        if (system.includes('Check the final answer'))
          return { content: reviews++ === 0 ? 'RESTART: show the multiplication' : 'CONFIRM' };
        if (isPresentation(req)) return { content: 'Final answer: 42' };
        const user = lastUser(req);
        if (!shownLabels(req).length)
          return req.model === 'a'
            ? {
                content: user.includes('Feedback on a previous attempt: show the multiplication')
                  ? 'ANSWER: 6 x 7 = 42'
                  : 'ANSWER: 42',
              }
            : { content: 'ANSWER: 0', delayMs: 300 };
        return { content: 'VOTE: agent1 | ok' };
      },
      { config: { max_orchestration_restarts: 2 } },
    );
    expect(result.restarts).toBe(1);
    expect(sink.named('restart')[0]!.payload).toEqual({ restart: 1, feedback: 'show the multiplication' });
    expect(result.answers.map((a) => a.content)).toEqual(['42', '6 x 7 = 42']);
    expect(sink.named('round').map((r) => (r.payload as { trigger: string }).trigger)).toEqual([
      'start',
      'new_answer',
      'restart',
      'new_answer',
    ]);
  });

  it('uses native tool calls for actions and traces ordinary tool calls', async () => {
    const calls: string[] = [];
    const calculator: ToolRunner = {
      run: async (name, args) => (calls.push(`${name}:${JSON.stringify(args)}`), { result: '42', success: true }),
    };
    // Agent a checks with the calculator (when it has it) before answering; the others vote for it.
    const script: Script = (req) => {
      if (isPresentation(req)) return { content: 'Final answer: 42' };
      const labels = shownLabels(req);
      const hasToolResult = req.messages.some((m) => m.role === 'tool');
      const hasCalculator = (req.tools ?? []).some((t) => t.function.name === 'calculator');
      if (!labels.length && req.model === 'a')
        return hasToolResult || !hasCalculator
          ? { toolCalls: [{ name: 'new_answer', arguments: { content: '42' } }] }
          : { toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }] };
      if (!labels.length) return { toolCalls: [{ name: 'new_answer', arguments: { content: 'x' } }], delayMs: 300 };
      return { toolCalls: [{ name: 'vote', arguments: { agent_id: 'agent1', reason: 'verified' } }] };
    };
    const { result, sink, server: s } = await run(script, { native: true });
    expect(result.winner).toBe('a');
    // nothing to vote for in the first requests: only new_answer is offered; once an answer exists, both
    const offered = s.requests.filter((r) => !isPresentation(r)).map((r) => r.tools!.map((t) => t.function.name));
    expect(offered[0]).toEqual(['new_answer']);
    expect(offered).toContainEqual(['new_answer', 'vote']);
    expect(calls).toEqual([]);
    const { result: r2, sink: sink2 } = await run(script, { native: true, tools: calculator });
    expect(calls).toEqual(['calculator:{"expression":"6*7"}']);
    expect(sink2.named('calculator')[0]).toMatchObject({
      type: 'tool',
      agent: 'a',
      payload: { name: 'calculator', result: '42', success: true },
    });
    expect(r2.usage.toolCalls).toBe(1);
    expect(r2.toolCalls).toEqual([expect.objectContaining({ agent: 'a', name: 'calculator', success: true })]);
    expect(sink.named('vote').length).toBe(3);
    // Prompt spans carry their JSON, assembled from reused parts: exactly the payload's own encoding.
    const prompts = [...sink.spans, ...sink2.spans].filter((sp) => sp.type === 'prompt');
    expect(prompts.length).toBeGreaterThan(8);
    for (const p of prompts) expect(p.payloadJson).toBe(JSON.stringify(p.payload));
  });

  it('reads implicit answers and votes from tiny models that ignore the action format', async () => {
    const { result, sink } = await run(
      (req) => {
        if (isPresentation(req)) return { content: 'It is 42.' };
        const labels = shownLabels(req);
        if (!labels.length) return req.model === 'a' ? { content: '42' } : { content: '41', delayMs: 300 };
        return req.model === 'c' ? { content: 'VOTE: agent1 | explicit still works' } : { content: ' 42 ' };
      },
      { implicit: true },
    );
    expect(result).toMatchObject({ winner: 'a', consensus: true, finalAnswer: 'It is 42.' });
    expect(sink.named('new_answer')[0]!.payload).toMatchObject({ content: '42', implicit: true });
    const votes = Object.fromEntries(
      sink.named('vote').map((v) => [v.agent, v.payload as { implicit?: boolean; reason: string }]),
    );
    expect(votes.b).toMatchObject({ implicit: true, reason: 'repeated this answer (100% word overlap)' });
    expect(votes.c!.implicit).toBeUndefined();
    expect(sink.named('invalid_action')).toHaveLength(0);
    const user = sink.named('chat')[0]!.payload as { request: { messages: { content: string }[] } };
    expect(user.request.messages[1]!.content).toMatch(/ANSWER: <your final answer>$/);
  });

  it('stops when interrupted, cancelling everything', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 150);
    const { result, sink } = await run(() => ({ hang: true }), { signal: ac.signal });
    expect(result.status).toBe('cancelled');
    expect(sink.named('cancel').map((c) => (c.payload as { reason: string }).reason)).toEqual([
      'interrupted',
      'interrupted',
      'interrupted',
    ]);
  });

  it('records the time to first token of streamed calls on their prompt spans', async () => {
    const script: Script = (req) =>
      isPresentation(req)
        ? { content: 'Final answer: 42' }
        : shownLabels(req).length
          ? { toolCalls: [{ name: 'vote', arguments: { agent_id: 'agent1', reason: 'r' } }] }
          : { toolCalls: [{ name: 'new_answer', arguments: { content: '42' } }], delayMs: req.model === 'a' ? 0 : 300 };
    for (const stream of [true, false]) {
      const { result, sink, server: s } = await run(script, { native: true, stream });
      expect(result.winner).toBe('a');
      expect(s.requests.every((q) => (q.stream ?? false) === stream)).toBe(true);
      const done = sink.spans.filter((sp) => sp.type === 'prompt' && (sp.payload as { response: unknown }).response);
      expect(done.length).toBeGreaterThan(3);
      for (const p of done) {
        const { ttft_ms: ttft, latency_ms: latency } = p.payload as { ttft_ms?: number; latency_ms: number };
        if (stream) expect(ttft).toBeGreaterThanOrEqual(0);
        if (stream) expect(ttft).toBeLessThanOrEqual(latency);
        else expect(p.payload).not.toHaveProperty('ttft_ms');
        expect(p.payloadJson).toBe(JSON.stringify(p.payload));
      }
      await server!.close();
      server = undefined;
    }
  });
});
