import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectionPool } from '../../src/llm/http-pool.js';
import { jsonEndpoint, postJson } from '../../src/llm/http.js';

let server: http.Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** An echo server counting its connections; `chunked` replies without Content-Length. */
async function echoServer(opts: { keepAliveTimeout?: number; chunked?: boolean } = {}) {
  const seen = { connections: 0, headers: [] as http.IncomingHttpHeaders[] };
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.headers.push(req.headers);
      const text = JSON.stringify({ echo: JSON.parse(Buffer.concat(chunks).toString()), url: req.url });
      if (opts.chunked) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(text.slice(0, 5));
        res.end(text.slice(5));
      } else {
        res.end(text);
      }
    });
  });
  if (opts.keepAliveTimeout !== undefined) server.keepAliveTimeout = opts.keepAliveTimeout;
  server.on('connection', () => seen.connections++);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions?x=1`);
  return { seen, endpoint: jsonEndpoint(url, { authorization: 'Bearer k-1' }) };
}

describe('postJson', () => {
  it('sends the JSON body and headers, and reuses one connection for sequential requests', async () => {
    const { seen, endpoint } = await echoServer();
    for (let i = 0; i < 3; i++) {
      const res = await postJson(endpoint, JSON.stringify({ i, text: 'héllo' }), 2000);
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body)).toEqual({ echo: { i, text: 'héllo' }, url: '/v1/chat/completions?x=1' });
    }
    expect(seen.connections).toBe(1);
    expect(seen.headers[0]).toMatchObject({
      authorization: 'Bearer k-1',
      'content-type': 'application/json',
      host: endpoint.url.host,
      connection: 'keep-alive',
    });
  });

  it('reads chunked replies and serves concurrent requests on separate connections', async () => {
    const { seen, endpoint } = await echoServer({ chunked: true });
    const replies = await Promise.all([0, 1, 2, 3].map((i) => postJson(endpoint, JSON.stringify({ i }), 2000)));
    expect(replies.map((r) => JSON.parse(r.body).echo.i)).toEqual([0, 1, 2, 3]);
    await postJson(endpoint, '{}', 2000);
    expect(seen.connections).toBe(4);
  });

  it('opens a new connection when the server has closed an idle one', async () => {
    let connections = 0;
    const raw = net.createServer((socket) => {
      connections++;
      socket.once('data', () => {
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}');
        setTimeout(() => socket.end(), 20);
      });
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    try {
      const endpoint = jsonEndpoint(new URL(`http://127.0.0.1:${(raw.address() as AddressInfo).port}/x`));
      await postJson(endpoint, '{}', 2000);
      await new Promise((r) => setTimeout(r, 100));
      expect((await postJson(endpoint, '{}', 2000)).body).toBe('{}');
      expect(connections).toBe(2);
    } finally {
      await new Promise((resolve) => raw.close(resolve));
    }
  });

  it('does not reuse a connection the server keeps for a second or less', async () => {
    const { seen, endpoint } = await echoServer({ keepAliveTimeout: 500 });
    await postJson(endpoint, '{}', 2000);
    await postJson(endpoint, '{}', 2000);
    expect(seen.connections).toBe(2);
  });

  it('queues requests beyond the connection limit until a connection is free, or until aborted', async () => {
    const { seen, endpoint: shared } = await echoServer();
    const { port } = shared.url;
    const endpoint = {
      ...shared,
      pool: new ConnectionPool({ secure: false, host: '127.0.0.1', port: Number(port) }, 1),
    };
    const aborted = new AbortController();
    const calls = [0, 1, 2].map((i) =>
      postJson(endpoint, JSON.stringify({ i }), 2000, i === 1 ? aborted.signal : undefined),
    );
    aborted.abort(new Error('not needed'));
    const settled = await Promise.allSettled(calls);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(seen.connections).toBe(1);
    expect(seen.headers).toHaveLength(2);
  });

  it('rejects an aborted request at once and keeps its connection when the reply arrives within the grace', async () => {
    let connections = 0;
    let cut = 0;
    server = http.createServer((req, res) => {
      req.resume().on('end', () => setTimeout(() => res.end('{"late":true}'), 200));
      res.on('close', () => {
        if (!res.writableEnded) cut++;
      });
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/x`);
    const endpoint = jsonEndpoint(url, {}, 2000);
    const ac = new AbortController();
    const started = performance.now();
    const pending = postJson(endpoint, '{}', 5000, ac.signal);
    setTimeout(() => ac.abort(new Error('superseded')), 5);
    await expect(pending).rejects.toThrow('superseded');
    expect(performance.now() - started).toBeLessThan(200);
    // The late reply is read off the connection, which then carries the next request.
    await new Promise((r) => setTimeout(r, 300));
    expect(JSON.parse((await postJson(endpoint, '{}', 5000)).body)).toEqual({ late: true });
    expect({ connections, cut }).toEqual({ connections: 1, cut: 0 });
  });

  it("closes an aborted request's connection when the grace runs out, so the server sees the disconnect", async () => {
    const closed: number[] = [];
    const started = performance.now();
    server = http.createServer((req, res) => {
      req.resume();
      res.on('close', () => closed.push(performance.now() - started));
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const endpoint = jsonEndpoint(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/x`), {}, 30);
    const ac = new AbortController();
    const pending = postJson(endpoint, '{}', 5000, ac.signal);
    await new Promise((r) => setTimeout(r, 10));
    ac.abort(new Error('stop'));
    await expect(pending).rejects.toThrow('stop');
    expect(closed).toEqual([]);
    await new Promise((r) => setTimeout(r, 150));
    expect(closed).toHaveLength(1);
    expect(closed[0]).toBeGreaterThanOrEqual(35);
  });

  it('rejects header values that would break the request head', () => {
    expect(() => jsonEndpoint(new URL('http://127.0.0.1:1/x'), { authorization: 'Bearer a\r\nx: y' })).toThrow(
      /invalid character/,
    );
  });

  it('fails with ECONNREFUSED when nothing listens', async () => {
    const { endpoint } = await echoServer();
    const port = (server!.address() as AddressInfo).port;
    await new Promise((resolve) => server!.close(resolve));
    server = undefined;
    await expect(postJson(jsonEndpoint(new URL(`http://127.0.0.1:${port}/x`)), '{}', 2000)).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
    expect(endpoint.url.port).toBe(String(port));
  });
});
