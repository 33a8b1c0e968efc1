import { afterEach, describe, expect, it } from 'vitest';
import { createLlmClient, LlmError } from '../../src/llm/client.js';
import { createEmbedder } from '../../src/llm/embeddings.js';
import { startScriptedServer, type Script, type ScriptedServer } from '../support/scripted-server.js';

const servers = new Set<ScriptedServer>();
afterEach(async () => {
  await Promise.all([...servers].map((s) => s.close()));
  servers.clear();
});

async function start(script: Script, port?: number): Promise<ScriptedServer> {
  const s = await startScriptedServer(script, port === undefined ? {} : { port });
  servers.add(s);
  return s;
}

const portOf = (s: ScriptedServer) => Number(new URL(s.baseUrl).port);
const ask = (n: number) => ({ model: 'm', messages: [{ role: 'user' as const, content: `question ${n}` }] });
const client = (urls: string[], extra: Partial<Parameters<typeof createLlmClient>[0]> = {}) =>
  createLlmClient({ baseUrl: urls, timeoutMs: 5000, maxRetries: 3, logprobs: false, retryBaseMs: 20, ...extra });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('an LLM client over replicas (scripted servers)', () => {
  it('spreads concurrent requests evenly over the replicas', async () => {
    const s = await Promise.all([1, 2, 3].map(() => start(() => ({ content: 'ok', delayMs: 40 }))));
    const c = client(s.map((x) => x.baseUrl));
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => c.chat(ask(i))));
    expect(results.every((r) => r.content === 'ok' && r.attempts === 1)).toBe(true);
    expect(s.map((x) => x.requests.length)).toEqual([10, 10, 10]);
  });

  it('sends more to a faster replica: the one with the fewest requests under way gets the next', async () => {
    const [slow, fast] = [
      await start(() => ({ content: 'slow', delayMs: 150 })),
      await start(() => ({ content: 'fast', delayMs: 5 })),
    ];
    const c = client([slow.baseUrl, fast.baseUrl]);
    // Four workers, each asking again as soon as it has an answer.
    await Promise.all(
      [0, 1, 2, 3].map(async (w) => {
        for (let i = 0; i < 8; i++) await c.chat(ask(w * 100 + i));
      }),
    );
    expect(slow.requests.length + fast.requests.length).toBe(32);
    expect(fast.requests.length).toBeGreaterThan(2 * slow.requests.length);
  });

  it('loses nothing when a replica is stopped mid-run, and sends to it again once it is back', async () => {
    const script: Script = () => ({ content: 'ok', delayMs: 15 });
    const s = await Promise.all([1, 2, 3].map(() => start(script)));
    const c = client(s.map((x) => x.baseUrl));
    const failures: unknown[] = [];
    let served = 0;
    let failedOver = 0;
    // Six workers asking one question after another until told to stop.
    const phase = async (until: () => boolean) => {
      await Promise.all(
        Array.from({ length: 6 }, async (_, w) => {
          for (let i = 0; !until(); i++) {
            try {
              const r = await c.chat(ask(w * 1000 + i));
              served++;
              if (r.attempts > 1) failedOver++;
            } catch (err) {
              failures.push(err);
              return;
            }
          }
        }),
      );
    };
    await phase(() => s[1]!.requests.length >= 10);
    const port = portOf(s[1]!);
    // Stopped with requests under way: their connections are reset.
    const before = { served, others: s[0]!.requests.length + s[2]!.requests.length, stopped: s[1]!.requests.length };
    const stopped = phase(() => served - before.served >= 90);
    await sleep(5);
    await s[1]!.close();
    servers.delete(s[1]!);
    await stopped;
    expect(failures).toEqual([]);
    expect(failedOver).toBeGreaterThan(0);
    // Every answer of this phase but those the stopped replica gave before it went came from the others.
    const byStopped = s[1]!.requests.length - before.stopped;
    expect(s[0]!.requests.length + s[2]!.requests.length - before.others).toBeGreaterThanOrEqual(
      served - before.served - byStopped,
    );

    const back = await start(script, port);
    const deadline = Date.now() + 10_000;
    await phase(() => back.requests.length >= 5 || Date.now() > deadline);
    expect(failures).toEqual([]);
    expect(back.requests.length).toBeGreaterThanOrEqual(5);
    // Back for good: it takes its share again.
    const shareBefore = back.requests.length;
    const startServed = served;
    await phase(() => served - startServed >= 60);
    expect(back.requests.length - shareBefore).toBeGreaterThanOrEqual(12);
  });

  it('honours Retry-After: a replica answering 429 gets no traffic until then, and the request goes to another at once', async () => {
    const limited = await start((_, i) =>
      i === 0
        ? { status: 429, headers: { 'retry-after': '1' }, body: { error: { message: 'slow down' } } }
        : { content: 'limited' },
    );
    const other = await start(() => ({ content: 'other' }));
    const c = client([limited.baseUrl, other.baseUrl]);
    const t0 = Date.now();
    const first = await c.chat(ask(0));
    // the replica is held back from when the client read its 429, at the latest now
    const limitedSince = Date.now();
    expect(first).toMatchObject({ content: 'other', attempts: 2 });
    expect(limitedSince - t0).toBeLessThan(900);
    for (let i = 1; i <= 5; i++) expect((await c.chat(ask(i))).content).toBe('other');
    expect(limited.requests).toHaveLength(1);
    await sleep(1000 - (Date.now() - limitedSince) + 20);
    const after = await Promise.all([c.chat(ask(10)), c.chat(ask(11))]);
    expect(after.map((r) => r.content).sort()).toEqual(['limited', 'other']);
  });

  it('waits for the first replica back when every one is down, instead of failing', async () => {
    const busy: Script = (_, i) => (i === 0 ? { status: 503, headers: { 'retry-after': '0.3' } } : { content: 'done' });
    const [a, b] = [await start(busy), await start(busy)];
    const c = client([a.baseUrl, b.baseUrl]);
    const t0 = Date.now();
    const r = await c.chat(ask(0));
    expect(r).toMatchObject({ content: 'done', attempts: 3 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(280);
    expect([a.requests.length, b.requests.length]).toEqual([2, 1]);
  });

  it("fails at once when every replica stays down beyond the request's timeout, and a wait ends on abort", async () => {
    const down: Script = () => ({ status: 503, headers: { 'retry-after': '20' } });
    const [a, b] = [await start(down), await start(down)];
    const c = client([a.baseUrl, b.baseUrl], { timeoutMs: 1000 });
    const t0 = Date.now();
    const err = await c.chat(ask(0)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LlmError);
    expect((err as Error).message).toMatch(
      /every replica \(http:\/\/127\.0\.0\.1:\d+, http:\/\/127\.0\.0\.1:\d+\) is down for \d+ ms more, beyond the request's timeout of 1000 ms/,
    );
    expect(Date.now() - t0).toBeLessThan(5000);

    // With a longer timeout the request waits for a replica to come back, until it is cancelled.
    const patient = client([a.baseUrl, b.baseUrl], { timeoutMs: 60_000 });
    const ac = new AbortController();
    const waiting = patient.chat(ask(1), { signal: ac.signal });
    await sleep(100);
    expect(a.requests.length + b.requests.length).toBe(4);
    const t1 = Date.now();
    ac.abort(new Error('superseded'));
    await expect(waiting).rejects.toThrow('superseded');
    expect(Date.now() - t1).toBeLessThan(2000);
    expect(a.requests.length + b.requests.length).toBe(4);
  });

  it('does not fail over on a client error (4xx other than 429)', async () => {
    const a = await start(() => ({ status: 401, body: { error: { message: 'bad key' } } }));
    const b = await start(() => ({ content: 'ok' }));
    const err = await client([a.baseUrl, b.baseUrl])
      .chat(ask(0))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'LlmError', status: 401, attempts: 1 });
    expect((err as Error).message).toContain(`${new URL(a.baseUrl).origin} answered 401: bad key`);
    expect([a.requests.length, b.requests.length]).toEqual([1, 0]);
  });

  it('cancels an in-flight request without counting it against its replica', async () => {
    const a = await start((_, i) => (i === 0 ? { hang: true } : { content: 'a' }));
    const b = await start(() => ({ content: 'b' }));
    const c = client([a.baseUrl, b.baseUrl]);
    const ac = new AbortController();
    const pending = c.chat(ask(0), { signal: ac.signal });
    await sleep(50);
    ac.abort(new Error('superseded'));
    await expect(pending).rejects.toThrow('superseded');
    // a is not down: the next two requests, sent at once, go one to each replica.
    const next = await Promise.all([c.chat(ask(1)), c.chat(ask(2))]);
    expect(next.map((r) => r.content).sort()).toEqual(['a', 'b']);
    await sleep(30);
    expect(a.aborted).toHaveLength(1);
  });

  it('times out a hanging replica and retries on another', async () => {
    const a = await start(() => ({ hang: true }));
    const b = await start(() => ({ content: 'b' }));
    const r = await client([a.baseUrl, b.baseUrl], { timeoutMs: 200 }).chat(ask(0));
    expect(r).toMatchObject({ content: 'b', attempts: 2 });
  });

  it('embeddings go to the replicas in turn and move on from one that is down', async () => {
    const a = await start(() => ({ content: '' }));
    const b = await start(() => ({ content: '' }));
    const embed = createEmbedder({ baseUrl: [a.baseUrl, b.baseUrl], model: 'emb', timeoutMs: 2000 });
    for (let i = 0; i < 4; i++) expect(await embed([`t${i}`])).toHaveLength(1);
    expect([a.embeddings.length, b.embeddings.length]).toEqual([2, 2]);
    await a.close();
    servers.delete(a);
    for (let i = 0; i < 4; i++) expect(await embed([`u${i}`])).toHaveLength(1);
    expect(b.embeddings.length).toBe(6);
  });
});
