import { afterEach, describe, expect, it } from 'vitest';
import { createLlmClient } from '../../src/llm/client.js';
import type { ChatResult } from '../../src/llm/types.js';
import { startScriptedServer, type ScriptedReply, type ScriptedServer } from '../support/scripted-server.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const client = (baseUrl: string, extra: Partial<Parameters<typeof createLlmClient>[0]> = {}) =>
  createLlmClient({ baseUrl, timeoutMs: 2000, maxRetries: 3, logprobs: true, stream: true, retryBaseMs: 5, ...extra });
const ask = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] };

const chunk = (delta: object, choice: object = {}) => ({
  id: 'c1',
  object: 'chat.completion.chunk',
  model: 'm-served',
  choices: [{ index: 0, delta, finish_reason: null, ...choice }],
});
const usage = {
  id: 'c1',
  object: 'chat.completion.chunk',
  model: 'm-served',
  choices: [],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
};
const token = (text: string, id: number) => ({
  logprobs: { content: [{ token: text, logprob: -id / 100 }] },
  token_ids: [id],
});

/** "hello" in two content deltas with their logprobs and token ids, the prompt's ids on the first chunk. */
const hello = [
  { ...chunk({ role: 'assistant', content: '' }), prompt_token_ids: [1, 2, 3] },
  chunk({ content: 'hel' }, token('hel', 10)),
  chunk({ content: 'lo' }, token('lo', 11)),
  chunk({}, { finish_reason: 'stop' }),
  usage,
  '[DONE]',
];

const withoutTimes = ({ latencyMs: _l, ttftMs: _t, ...rest }: ChatResult) => rest;

describe('LLM client, streamed', () => {
  it('assembles content deltas, logprobs, token ids and usage, asking for the usage chunk', async () => {
    server = await startScriptedServer(() => ({ events: hello }));
    const r = await client(server.baseUrl).chat(ask);
    expect(withoutTimes(r)).toEqual({
      content: 'hello',
      toolCalls: [],
      finishReason: 'stop',
      model: 'm-served',
      attempts: 1,
      usage: { promptTokens: 3, completionTokens: 2, totalTokens: 5 },
      logprobs: [
        { token: 'hel', logprob: -0.1 },
        { token: 'lo', logprob: -0.11 },
      ],
      tokenIds: [10, 11],
      promptTokenIds: [1, 2, 3],
    });
    expect(server.requests[0]).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
      logprobs: true,
      return_token_ids: true,
    });
  });

  it('assembles tool calls whose arguments arrive in fragments, per index', async () => {
    const events = [
      chunk({ role: 'assistant', content: null }),
      chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'vote', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"agent_id":' } }] }),
      chunk({
        tool_calls: [
          { index: 1, id: 'call_b', type: 'function', function: { name: 'calculator', arguments: '{"expr' } },
        ],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"agent1"}' } }] }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: '":"1+1"}' } }] }),
      chunk({}, { finish_reason: 'tool_calls' }),
      usage,
      '[DONE]',
    ];
    server = await startScriptedServer(() => ({ events }));
    const r = await client(server.baseUrl).chat({ ...ask, tools: [] });
    expect(r).toMatchObject({ content: null, finishReason: 'tool_calls' });
    expect(r.toolCalls).toEqual([
      { id: 'call_a', type: 'function', function: { name: 'vote', arguments: '{"agent_id":"agent1"}' } },
      { id: 'call_b', type: 'function', function: { name: 'calculator', arguments: '{"expr":"1+1"}' } },
    ]);
  });

  it('gives callers the result the non-streamed path gives, plus the time to first token', async () => {
    const replies: ScriptedReply[] = [
      { content: 'forty two', usage: { prompt_tokens: 9, completion_tokens: 3 } },
      { toolCalls: [{ name: 'vote', arguments: { agent_id: 'agent2', reason: 'r' } }] },
    ];
    for (const reply of replies) {
      server = await startScriptedServer(() => reply);
      const streamed = await client(server.baseUrl, { logprobs: false }).chat(ask);
      const whole = await client(server.baseUrl, { logprobs: false, stream: false }).chat(ask);
      expect(withoutTimes(streamed)).toEqual(withoutTimes(whole));
      expect(whole.ttftMs).toBeNull();
      expect(streamed.ttftMs).toBeGreaterThanOrEqual(0);
      expect(server.requests.map((q) => q.stream ?? false)).toEqual([true, false]);
      await server.close();
      server = undefined;
    }
  });

  it('measures the time to first token from the request to the first content, not the role chunk', async () => {
    const events = [
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'late' }),
      chunk({}, { finish_reason: 'stop' }),
      '[DONE]',
    ];
    server = await startScriptedServer(() => ({ events, gapMs: 120 }));
    const r = await client(server.baseUrl).chat(ask);
    expect(r.content).toBe('late');
    expect(r.ttftMs).toBeGreaterThanOrEqual(100);
    expect(r.ttftMs).toBeLessThan(r.latencyMs - 100);
  });

  it('retries a stream cut before [DONE], whether the connection drops or the response ends', async () => {
    const partial = hello.slice(0, 2);
    server = await startScriptedServer((_, i) =>
      i === 0 ? { events: partial, then: 'cut' } : i === 1 ? { events: partial } : { events: hello },
    );
    const r = await client(server.baseUrl).chat(ask);
    expect(r).toMatchObject({ content: 'hello', attempts: 3, tokenIds: [10, 11] });
  });

  it('times out a stream that stalls mid-way, and retries it', async () => {
    server = await startScriptedServer((_, i) =>
      i === 0 ? { events: hello.slice(0, 2), then: 'stall' } : { events: hello },
    );
    const started = performance.now();
    const r = await client(server.baseUrl, { timeoutMs: 200 }).chat(ask);
    expect(r).toMatchObject({ content: 'hello', attempts: 2 });
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    await new Promise((res) => setTimeout(res, 20));
    expect(server.aborted).toHaveLength(1);
  });

  it('falls back to non-streamed requests for a server that rejects stream, and remembers', async () => {
    const refusal = {
      error: { message: 'streaming is not supported by this server; send stream: false', param: 'stream' },
    };
    server = await startScriptedServer((req) => (req.stream ? { status: 400, body: refusal } : { content: 'plain' }));
    const c = client(server.baseUrl, { logprobs: false });
    expect(await c.chat(ask)).toMatchObject({ content: 'plain', attempts: 1, ttftMs: null });
    await c.chat(ask);
    expect(server.requests.map((q) => q.stream ?? false)).toEqual([true, false, false]);
  });

  it('reads a whole completion from a server that ignores stream', async () => {
    const body = {
      choices: [{ message: { content: 'whole' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1, completion_tokens: 1 },
    };
    server = await startScriptedServer(() => ({ status: 200, body }));
    expect(await client(server.baseUrl).chat(ask)).toMatchObject({
      content: 'whole',
      ttftMs: null,
      usage: { totalTokens: 2 },
    });
  });

  it('does not retry an error the server reports mid-stream', async () => {
    server = await startScriptedServer(() => ({
      events: [chunk({ content: 'a' }), { error: { message: 'engine died' } }, '[DONE]'],
    }));
    await expect(client(server.baseUrl).chat(ask)).rejects.toThrow(/mid-stream: engine died/);
    expect(server.requests).toHaveLength(1);
  });

  it('cancels a stream on abort and the server sees the disconnect', async () => {
    const events = Array.from({ length: 50 }, (_, i) => chunk({ content: `t${i} ` }));
    server = await startScriptedServer(() => ({ events, gapMs: 20 }));
    const ac = new AbortController();
    const pending = client(server.baseUrl).chat(ask, { signal: ac.signal });
    setTimeout(() => ac.abort(new Error('superseded')), 80);
    await expect(pending).rejects.toThrow('superseded');
    await new Promise((r) => setTimeout(r, 60));
    expect(server.aborted).toHaveLength(1);
  });
});
