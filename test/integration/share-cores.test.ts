import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { CoreSharing, shareCores, threadsEach, type CoreUser } from '../../src/serving/share-cores.js';

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
      res
        .writeHead(status, { 'content-type': 'application/json' })
        .end(JSON.stringify(status === 200 ? body : { error: { message: 'no' } }));
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, ready, bodies };
}

describe("dividing the cores among a run's llama.cpp servers", () => {
  it('gives each an equal share, at least one thread', () => {
    expect([threadsEach(2, 1), threadsEach(2, 2), threadsEach(2, 3), threadsEach(16, 3), threadsEach(8, 0)]).toEqual([
      2, 1, 1, 5, 8,
    ]);
  });

  it('tells each llama.cpp server its share once, leaves other engines alone, and keeps what each has', async () => {
    const a = await fake({ backend: 'llama.cpp', threads: 4 });
    const b = await fake({ backend: 'llama.cpp', threads: 4 });
    const t = await fake({ backend: 'transformers', threads: 4 });
    const current = new Map<string, number>();
    expect(await shareCores([a], current)).toEqual([]);
    expect(a.bodies).toEqual([]); // alone it keeps every core it started with
    expect(await shareCores([a, b, t], current)).toEqual([]);
    expect([a.bodies, b.bodies, t.bodies]).toEqual([
      [{ path: '/threads', threads: 2 }],
      [{ path: '/threads', threads: 2 }],
      [],
    ]);
    expect(await shareCores([a, b, t], current)).toEqual([]);
    expect(a.bodies).toHaveLength(1); // nothing changed: nothing sent
    expect(current).toEqual(
      new Map([
        [a.baseUrl, 2],
        [b.baseUrl, 2],
      ]),
    );
  });

  it('reports a server that refuses, which keeps its own threads', async () => {
    const a = await fake({ backend: 'llama.cpp', threads: 2 });
    const b = await fake({ backend: 'llama.cpp', threads: 2 }, 400);
    const current = new Map<string, number>();
    const failures = await shareCores([a, b], current);
    expect(failures).toEqual([expect.stringMatching(new RegExp(`^${b.baseUrl.replace('/v1', '')}/threads: HTTP 400`))]);
    expect(current).toEqual(new Map([[a.baseUrl, 1]]));
  });

  it('divides the cores among the servers with requests in flight, anew as each becomes busy or idle', async () => {
    const a = await fake({ backend: 'llama.cpp', threads: 2 });
    const b = await fake({ backend: 'llama.cpp', threads: 2 });
    const sharing = new CoreSharing<CoreUser>();
    sharing.add(a);
    sharing.add(b);
    const gates: (() => void)[] = [];
    const client = { chat: () => new Promise<string>((resolve) => gates.push(() => resolve('ok'))) };
    const [ca, cb] = [sharing.track(a, client), sharing.track(b, client)];
    const last = (s: { bodies: unknown[] }) => s.bodies.at(-1);
    const onA = ca.chat();
    await sharing.settled();
    expect(a.bodies).toEqual([]); // alone: every core, as it started
    const onB = [cb.chat(), cb.chat()];
    await sharing.settled();
    expect([last(a), last(b)]).toEqual([
      { path: '/threads', threads: 1 },
      { path: '/threads', threads: 1 },
    ]);
    gates.shift()!(); // a's request ends: b decodes alone
    expect(await onA).toBe('ok');
    await sharing.settled();
    expect([a.bodies.length, last(b)]).toEqual([1, { path: '/threads', threads: 2 }]);
    gates.shift()!(); // one of b's two ends: b is still busy, nothing changes
    await onB[0];
    await sharing.settled();
    expect([a.bodies.length, b.bodies.length]).toEqual([1, 2]);
    sharing.remove(b); // an exited server is left out
    gates.shift()!();
    await onB[1];
    void ca.chat();
    await sharing.settled();
    expect([a.bodies.length, last(a)]).toEqual([2, { path: '/threads', threads: 2 }]);
  });
});
