// The serve benchmark's client (bench/lib/serve-http.mjs, serve-requests.mjs) against a scripted SSE server:
// time to first token counts from the first chunk with content, tool-call deltas are reassembled, format
// slips are reported, and a reply's call is checked against MassGen's tool schemas.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error bench/ is plain ESM JavaScript without type declarations
import { postStream } from '../../bench/lib/serve-http.mjs';
// @ts-expect-error bench/ is plain ESM JavaScript without type declarations
import { checkCall, sendRequest } from '../../bench/lib/serve-requests.mjs';

let server: http.Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

const chunk = (delta: object, finish: string | null = null) => ({
  id: 'c1',
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta, finish_reason: finish }],
});

/** Serves `events` (objects or raw strings) as SSE, `pauseMs` apart, each split in two writes mid-character. */
async function sseServer(events: (object | string)[], pauseMs = 0) {
  const bodies: unknown[] = [];
  server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', async () => {
      bodies.push(JSON.parse(Buffer.concat(parts).toString()));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const e of events) {
        const bytes = Buffer.from(`data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`);
        const cut = bytes.indexOf(0xa9); // inside "é" when there is one
        res.write(bytes.subarray(0, cut > 0 ? cut : 3));
        res.write(bytes.subarray(cut > 0 ? cut : 3));
        if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
      }
      res.end();
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}/v1/chat/completions`, bodies };
}

const usage = {
  id: 'c1',
  object: 'chat.completion.chunk',
  choices: [],
  usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
};

describe('serve benchmark client', () => {
  it('times the first content chunk, not the role chunk, and reads usage', async () => {
    const { url, bodies } = await sseServer(
      [
        chunk({ role: 'assistant', content: '' }),
        chunk({ content: 'café' }),
        chunk({ content: '!' }, 'length'),
        usage,
        '[DONE]',
      ],
      60,
    );
    const r = await postStream(url, { model: 'm', messages: [] });
    expect(bodies[0]).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(r.content).toBe('café!');
    expect(r.ttftS).toBeGreaterThanOrEqual(0.05); // the role chunk came 60 ms earlier
    expect(r.ttftS).toBeLessThan(r.latencyS);
    expect(r).toMatchObject({ chunks: 4, contentChunks: 2, finish: 'length', usage: usage.usage, problems: [] });
  });

  it('reassembles tool-call deltas and checks the call', async () => {
    const { url } = await sseServer([
      chunk({ role: 'assistant', content: '' }),
      chunk({ tool_calls: [{ index: 0, id: 'x', type: 'function', function: { name: 'vote', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"agent_id": "agent_b", ' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"reason": "right"}' } }] }, 'tool_calls'),
      usage,
      '[DONE]',
    ]);
    const r = await sendRequest(url, 'stream', 0, { maxTokens: 8, sampled: false, ignoreEos: true });
    expect(r).toMatchObject({ completionTokens: 2, promptTokens: 5, finish: 'tool_calls', problems: [] });
    const streamed = await postStream(url, {});
    const args = '{"agent_id": "agent_b", "reason": "right"}';
    expect(streamed.calls).toEqual([{ id: 'x', name: 'vote', arguments: args }]);
    expect(checkCall(streamed.calls)).toEqual({ valid: true, name: 'vote' });
  });

  it('reports format slips: no role, a chunk after finish, no usage, no [DONE]', async () => {
    const { url } = await sseServer([chunk({ content: 'a' }, 'stop'), chunk({ content: 'b' })]);
    const r = await postStream(url, {});
    expect(r.problems).toEqual([
      'the first chunk has no role',
      'a chunk after finish_reason',
      'no [DONE]',
      'no usage chunk (include_usage was asked)',
    ]);
  });

  it('rejects an error event', async () => {
    const { url } = await sseServer([
      chunk({ role: 'assistant', content: '' }),
      { error: { message: 'boom' } },
      '[DONE]',
    ]);
    await expect(postStream(url, {})).rejects.toThrow(/error event.*boom/);
  });

  it('checks calls against the MassGen tool schemas', () => {
    expect(checkCall([])).toMatchObject({ valid: false, why: 'no call' });
    expect(checkCall([{ name: 'new_answer', arguments: '{"content": "Paris"}' }])).toEqual({
      valid: true,
      name: 'new_answer',
    });
    expect(checkCall([{ name: 'vote', arguments: '{"agent_id": "agent_z", "reason": "x"}' }]).valid).toBe(false);
    expect(checkCall([{ name: 'vote', arguments: '{"agent_id": "agent_b"}' }]).valid).toBe(false);
    expect(checkCall([{ name: 'new_answer', arguments: '{"content": "cut sh' }]).why).toBe('arguments are not JSON');
    expect(checkCall([{ name: 'other', arguments: '{}' }]).valid).toBe(false);
  });
});
