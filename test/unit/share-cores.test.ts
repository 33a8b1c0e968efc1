import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { shareCores, threadsEach, type CoreUser } from '../../src/serving/share-cores.js';

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/** A stand-in for one local server's /threads route: records each body; answers `status`. */
async function fake(ready: Record<string, unknown>, status = 200): Promise<CoreUser & { bodies: unknown[] }> {
  const bodies: unknown[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { threads: number };
      bodies.push({ path: req.url, ...body });
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(status === 200 ? body : { error: { message: 'no' } }));
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, ready, bodies };
}

describe('dividing the cores among a run\'s llama.cpp servers', () => {
  it('gives each an equal share, at least one thread', () => {
    expect([threadsEach(2, 1), threadsEach(2, 2), threadsEach(2, 3), threadsEach(16, 3), threadsEach(8, 0)]).toEqual([2, 1, 1, 5, 8]);
  });

  it('tells each llama.cpp server its share once, leaves other engines alone, and keeps what each has', async () => {
    const a = await fake({ backend: 'llama.cpp', threads: 4 });
    const b = await fake({ backend: 'llama.cpp', threads: 4 });
    const t = await fake({ backend: 'transformers', threads: 4 });
    const current = new Map<string, number>();
    expect(await shareCores([a], current)).toEqual([]);
    expect(a.bodies).toEqual([]); // alone it keeps every core it started with
    expect(await shareCores([a, b, t], current)).toEqual([]);
    expect([a.bodies, b.bodies, t.bodies]).toEqual([[{ path: '/threads', threads: 2 }], [{ path: '/threads', threads: 2 }], []]);
    expect(await shareCores([a, b, t], current)).toEqual([]);
    expect(a.bodies).toHaveLength(1); // nothing changed: nothing sent
    expect(current).toEqual(new Map([[a.baseUrl, 2], [b.baseUrl, 2]]));
  });

  it('reports a server that refuses, which keeps its own threads', async () => {
    const a = await fake({ backend: 'llama.cpp', threads: 2 });
    const b = await fake({ backend: 'llama.cpp', threads: 2 }, 400);
    const current = new Map<string, number>();
    const failures = await shareCores([a, b], current);
    expect(failures).toEqual([expect.stringMatching(new RegExp(`^${b.baseUrl.replace('/v1', '')}/threads: HTTP 400`))]);
    expect(current).toEqual(new Map([[a.baseUrl, 1]]));
  });
});
