import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createLlmClient, LlmError } from '../../src/llm/client.js';

const BODY = JSON.stringify({ choices: [{ message: { content: 'whole answer' }, finish_reason: 'stop' }] });
const CUT = BODY.slice(0, 25);
const OK = `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${BODY.length}\r\n\r\n${BODY}`;

/** How a 200 response is cut short: the head promises more than the connection delivers before it closes. */
const TRUNCATED = {
  'Content-Length not reached': `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${BODY.length}\r\n\r\n${CUT}`,
  'a chunked body cut before its last chunk': `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n${CUT.length.toString(16)}\r\n${CUT}\r\n`,
  'a close-delimited body that is cut JSON': `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n${CUT}`,
};

let server: net.Server | undefined;
afterEach(() => {
  server?.close();
  server = undefined;
});

/** A raw TCP server: request i gets replies[i] (the last one repeats), then the connection is closed. */
async function rawServer(replies: string[]): Promise<{ baseUrl: string; requests: () => number }> {
  let n = 0;
  server = net.createServer((socket) => {
    socket.on('data', () => {
      const reply = replies[Math.min(n++, replies.length - 1)]!;
      socket.end(reply);
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, requests: () => n };
}

const ask = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] };
const client = (baseUrl: string, maxRetries: number) =>
  createLlmClient({ baseUrl, timeoutMs: 5000, maxRetries, logprobs: false, retryBaseMs: 1 });

describe('a 200 response cut short is retried like a connection reset', () => {
  it.each(Object.entries(TRUNCATED))('%s: the retry gets the whole answer', async (_name, truncated) => {
    const s = await rawServer([truncated, OK]);
    const r = await client(s.baseUrl, 2).chat(ask);
    expect(r).toMatchObject({ content: 'whole answer', attempts: 2 });
    expect(s.requests()).toBe(2);
  });

  it.each(Object.entries(TRUNCATED))(
    '%s every time: gives up after max_retries, saying the response ended early',
    async (_name, truncated) => {
      const s = await rawServer([truncated]);
      const err = await client(s.baseUrl, 2)
        .chat(ask)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LlmError);
      expect(err).toMatchObject({ attempts: 3, retriable: true });
      expect((err as Error).message).toMatch(/the response ended early/);
      expect(s.requests()).toBe(3);
    },
  );

  it('does not retry a complete JSON body of the wrong shape', async () => {
    const wrong = JSON.stringify({ nothing: 'here' });
    const s = await rawServer([
      `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${wrong.length}\r\n\r\n${wrong}`,
    ]);
    await expect(client(s.baseUrl, 2).chat(ask)).rejects.toThrow(/no choices\[0\]\.message/);
    expect(s.requests()).toBe(1);
  });
});
