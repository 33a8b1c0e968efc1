import { afterEach, describe, expect, it } from 'vitest';
import { createLlmClient, LlmError } from '../../src/llm/client.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const client = (baseUrl: string, extra: Partial<Parameters<typeof createLlmClient>[0]> = {}) =>
  createLlmClient({ baseUrl, timeoutMs: 2000, maxRetries: 3, logprobs: true, retryBaseMs: 5, ...extra });
const ask = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] };

describe('LLM client', () => {
  it('returns content, usage, logprobs and token ids', async () => {
    server = await startScriptedServer(() => ({
      content: 'hello there',
      usage: { prompt_tokens: 7, completion_tokens: 2 },
    }));
    const r = await client(server.baseUrl).chat(ask);
    expect(r).toMatchObject({
      content: 'hello there',
      finishReason: 'stop',
      usage: { promptTokens: 7, completionTokens: 2, totalTokens: 9 },
      attempts: 1,
      promptTokenIds: [1, 2, 3],
    });
    expect(r.logprobs).toEqual([
      { token: 'hello', logprob: -0.5 },
      { token: ' ', logprob: -0.5 },
      { token: 'there', logprob: -0.5 },
    ]);
    expect(r.tokenIds).toEqual([100, 101, 102]);
    expect(server.requests[0]).toMatchObject({ logprobs: true, return_token_ids: true });
  });

  it('retries 429 and 5xx with backoff, honouring Retry-After', async () => {
    server = await startScriptedServer((_, i) =>
      i === 0 ? { status: 429, headers: { 'retry-after': '0' } } : i === 1 ? { status: 503 } : { content: 'ok' },
    );
    const r = await client(server.baseUrl).chat(ask);
    expect(r).toMatchObject({ content: 'ok', attempts: 3 });
  });

  it('retries connection resets and gives up after max_retries', async () => {
    server = await startScriptedServer((_, i) => (i < 2 ? { destroy: true } : { content: 'back' }));
    expect((await client(server.baseUrl).chat(ask)).content).toBe('back');
    const s2 = await startScriptedServer(() => ({ status: 500 }));
    try {
      await expect(client(s2.baseUrl, { maxRetries: 2 }).chat(ask)).rejects.toMatchObject({
        name: 'LlmError',
        status: 500,
        attempts: 3,
      });
      expect(s2.requests).toHaveLength(3);
    } finally {
      await s2.close();
    }
  });

  it('does not retry client errors', async () => {
    server = await startScriptedServer(() => ({ status: 401, body: { error: { message: 'bad key' } } }));
    const err = await client(server.baseUrl)
      .chat(ask)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LlmError);
    expect((err as LlmError).message).toMatch(/answered 401: bad key/);
    expect(server.requests).toHaveLength(1);
  });

  it('times out a hanging request, retrying it', async () => {
    server = await startScriptedServer((_, i) => (i === 0 ? { hang: true } : { content: 'late but fine' }));
    const r = await client(server.baseUrl, { timeoutMs: 150 }).chat(ask);
    expect(r).toMatchObject({ content: 'late but fine', attempts: 2 });
  });

  it('drops logprobs and token ids for servers that reject them, and remembers', async () => {
    server = await startScriptedServer((req) =>
      req.return_token_ids
        ? { status: 400, body: { error: { message: 'Unrecognized request argument supplied: return_token_ids' } } }
        : req.logprobs
          ? { status: 400, body: { error: { message: 'logprobs is not supported' } } }
          : { content: 'plain' },
    );
    const c = client(server.baseUrl);
    expect(await c.chat(ask)).toMatchObject({ content: 'plain', attempts: 1, logprobs: null, tokenIds: null });
    await c.chat(ask);
    expect(server.requests.map((r) => [r.logprobs ?? false, r.return_token_ids ?? false])).toEqual([
      [true, true],
      [true, false],
      [false, false],
      [false, false],
    ]);
  });

  it('cancels an in-flight request on abort and the server sees the disconnect', async () => {
    server = await startScriptedServer(() => ({ hang: true }));
    const ac = new AbortController();
    const pending = client(server.baseUrl).chat(ask, { signal: ac.signal });
    await new Promise((r) => setTimeout(r, 50));
    ac.abort(new Error('superseded'));
    await expect(pending).rejects.toThrow('superseded');
    await new Promise((r) => setTimeout(r, 50));
    expect(server.aborted).toHaveLength(1);
  });

  it('sends the API key as a bearer token', async () => {
    server = await startScriptedServer(() => ({ content: 'ok' }));
    await client(server.baseUrl, { apiKey: 'k-123' }).chat(ask);
    await client(server.baseUrl).chat(ask);
    expect(server.headers.map((h) => h.authorization)).toEqual(['Bearer k-123', undefined]);
  });

  it('returns native tool calls', async () => {
    server = await startScriptedServer(() => ({
      toolCalls: [{ name: 'vote', arguments: { agent_id: 'agent1', reason: 'best' } }],
    }));
    const r = await client(server.baseUrl).chat({ ...ask, tools: [] });
    expect(r.toolCalls[0]!.function).toEqual({ name: 'vote', arguments: '{"agent_id":"agent1","reason":"best"}' });
    expect(r.finishReason).toBe('tool_calls');
  });
});
