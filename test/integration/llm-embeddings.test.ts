import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createEmbedder } from '../../src/llm/embeddings.js';

let server: http.Server | undefined;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

async function serve(
  reply: (body: { model: string; input: string[] }) => { status: number; body: unknown },
): Promise<{ url: string; seen: unknown[] }> {
  const seen: unknown[] = [];
  server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (c) => {
      text += c;
    });
    req.on('end', () => {
      const body = JSON.parse(text);
      seen.push({ path: req.url, auth: req.headers.authorization, body });
      const r = reply(body);
      res.writeHead(r.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(r.body));
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}/v1`, seen };
}

describe('the embeddings client', () => {
  it('posts to /v1/embeddings and returns one vector per text in input order, whatever order the server lists them', async () => {
    const { url, seen } = await serve((b) => ({
      status: 200,
      body: { data: b.input.map((t, i) => ({ index: i, embedding: [t.length, i] })).reverse() },
    }));
    const embed = createEmbedder({ baseUrl: url, apiKey: 'k', model: 'emb', timeoutMs: 5000 });
    expect(await embed(['ab', 'abcd'])).toEqual([
      [2, 0],
      [4, 1],
    ]);
    expect(seen[0]).toEqual({
      path: '/v1/embeddings',
      auth: 'Bearer k',
      body: { model: 'emb', input: ['ab', 'abcd'] },
    });
  });

  it("fails with the server's reply on an error status or a malformed body", async () => {
    const { url } = await serve((b) =>
      b.input[0] === 'bad'
        ? { status: 404, body: { error: 'no such model' } }
        : { status: 200, body: { data: [{ index: 0, embedding: ['x'] }] } },
    );
    const embed = createEmbedder({ baseUrl: url, model: 'emb', timeoutMs: 5000 });
    await expect(embed(['bad'])).rejects.toThrow(/HTTP 404: .*no such model/);
    await expect(embed(['ok'])).rejects.toThrow(/expected 1 numeric vectors, got 1/);
  });
});
