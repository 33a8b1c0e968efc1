import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { gateway, type Gateway } from '../../src/pipeline/serve/gateway.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { startFuzzBackend, type FuzzBackend } from '../fuzz/support/gateway-backend.js';
import { neverRead, rawExchange } from '../fuzz/support/gateway-client.js';
import { tempDir } from '../helpers.js';

const GW_KEY = 'gw-limits-client-key-0123456789';
const BACKEND_KEY = 'sk-backend-limits-secret-abcdefghij';

interface Setup {
  backend: FuzzBackend;
  rt: Runtime;
  gw: Gateway;
  port: number;
}
const open: Setup[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) {
    await s.gw.stop();
    await s.rt.close();
    await s.backend.close();
  }
});

async function setup(limits = ''): Promise<Setup> {
  const backend = await startFuzzBackend();
  const dir = tempDir({
    'massgen-rl.yaml': `models:
  scripted: { base_url: "${backend.baseUrl}", model: m, api_key_env: BACKEND_KEY, max_retries: 0 }
agents:
  - { id: a, model: scripted }
gateway: { api_keys_env: [GW_KEY]${limits ? `, ${limits}` : ''} }
`,
  });
  const rt = new Runtime(loadConfig({ cwd: dir, env: { ...process.env, GW_KEY, BACKEND_KEY } }));
  const gw = await gateway(rt, { port: 0, flushMs: 20 });
  const s = { backend, rt, gw, port: Number(new URL(gw.url).port) };
  open.push(s);
  return s;
}

function post(s: Setup, body: string | Buffer) {
  return fetch(`${s.gw.url}/v1/chat/completions`, {
    method: 'POST',
    body,
    headers: { authorization: `Bearer ${GW_KEY}`, 'content-type': 'application/json' },
  });
}

const chat = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: 'scripted', messages: [{ role: 'user', content: 'hi' }], ...extra });

const request = (body: string) =>
  `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${GW_KEY}\r\n`
  + `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

async function errorOf(res: Response): Promise<{ status: number; error: Record<string, unknown> }> {
  return { status: res.status, error: ((await res.json()) as { error: Record<string, unknown> }).error };
}

describe("the gateway refuses what it cannot take, in OpenAI's shape", () => {
  it("a backend that echoes the gateway's key: a 502, the key redacted, nothing of it stored", async () => {
    const s = await setup();
    const { status, error } = await errorOf(await post(s, chat({ fuzz_backend: 'echo-key' })));
    expect(status).toBe(502);
    expect(error.code).toBe('backend_auth');
    expect(JSON.stringify(error)).not.toContain(BACKEND_KEY);
    await s.gw.stop();
    const spans = s.rt.store().spans.list(s.rt.store().rollouts.list()[0]!.id);
    expect(JSON.stringify(spans)).not.toContain(BACKEND_KEY);
  });

  it('JSON nested past 100 levels, a lone surrogate and invalid UTF-8: 400s naming the field', async () => {
    const s = await setup();
    let deep: unknown = 'x';
    for (let i = 0; i < 150; i++) deep = [deep];
    const nested = await errorOf(await post(s, chat({ metadata: deep })));
    expect([nested.status, nested.error.param]).toEqual([400, 'metadata']);
    const surrogate = await errorOf(
      await post(s, '{"model":"scripted","messages":[{"role":"user","content":"\\ud800"}]}'),
    );
    expect([surrogate.status, surrogate.error.param]).toEqual([400, 'messages']);
    const bytes = Buffer.concat([
      Buffer.from(chat().slice(0, 40)),
      Buffer.from([0xff, 0xfe]),
      Buffer.from(chat().slice(40)),
    ]);
    const utf8 = await errorOf(await post(s, bytes));
    expect([utf8.status, utf8.error.code]).toEqual([400, 'invalid_encoding']);
    expect((await post(s, chat())).status).toBe(200);
  });

  it('bodies, headers and header counts past their limits: 413 and 431, and the next request is served', async () => {
    const s = await setup('max_body_bytes: 1024, max_header_bytes: 2048, max_headers: 10');
    const big = chat({ pad: 'a'.repeat(2000) });
    const declared = await rawExchange(s.port, [request(big)]);
    expect(declared.status).toBe(413);
    const chunked = await rawExchange(s.port, [
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${GW_KEY}\r\n`
        + `Transfer-Encoding: chunked\r\n\r\n${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`,
    ]);
    expect(chunked.status).toBe(413);
    const header = await rawExchange(s.port, [
      `GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(4000)}\r\n\r\n`,
    ]);
    expect([header.status, JSON.parse(header.body).error.code]).toEqual([431, 'headers_too_large']);
    const many = Array.from({ length: 12 }, (_, i) => `X-H${i}: v\r\n`).join('');
    const counted = await rawExchange(s.port, [
      `GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${GW_KEY}\r\n${many}\r\n`,
    ]);
    expect([counted.status, JSON.parse(counted.body).error.code]).toEqual([431, 'too_many_headers']);
    expect((await post(s, chat())).status).toBe(200);
  });

  it('a request trickled past request_timeout_s: a 408, then closed', async () => {
    const s = await setup('request_timeout_s: 1');
    const parts = [
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${GW_KEY}\r\nContent-Length: 100\r\n\r\n`,
      ...'{"model":"scripted"'.split(''),
    ];
    const r = await rawExchange(s.port, parts, { gapMs: 200, waitMs: 5000 });
    expect(r.status).toBe(408);
    expect(JSON.parse(r.body).error.code).toBe('request_timeout');
    expect(r.ms).toBeLessThan(4000);
  });

  it('connections past the per-client limit: a 429 on each, the rest served', async () => {
    const s = await setup('max_connections_per_client: 4');
    let release!: () => void;
    const holdUntil = new Promise<void>((r) => (release = r));
    const get = `GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${GW_KEY}\r\n\r\n`;
    const replies = await Promise.all(
      Array.from({ length: 7 }, () => rawExchange(s.port, [get], { holdUntil, waitMs: 1000 })),
    );
    release();
    expect(replies.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 429, 429, 429]);
  });

  it('a client that stops reading a stream holds its backend back, and is cut off after write_timeout_s', async () => {
    const s = await setup('write_timeout_s: 1');
    const close = neverRead(s.port, request(chat({ stream: true, fuzz_backend: 'long', fuzz_chunks: 20_000 })));
    const until = async (check: () => boolean) => {
      for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
      return check();
    };
    expect(await until(() => s.backend.stats.streaming === 1)).toBe(true);
    expect(await until(() => s.backend.stats.streaming === 0)).toBe(true);
    close();
    // held back: the backend could not write its 20,000 chunks (~24 MB) into the gateway's memory
    expect(s.backend.stats.sent).toBeLessThan(20_000);
    expect((await post(s, chat())).status).toBe(200);
  });

  it('a stop during streams lets each finish, then refuses connections', async () => {
    const s = await setup();
    const streams = Array.from({ length: 6 }, () =>
      post(s, chat({ stream: true, fuzz_backend: 'slow', fuzz_chunks: 40 })).then((r) => r.text()),
    );
    for (let i = 0; i < 200 && s.backend.stats.streaming < 6; i++) await new Promise((r) => setTimeout(r, 10));
    expect(s.backend.stats.streaming).toBe(6);
    await s.gw.stop();
    for (const text of await Promise.all(streams)) expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    await expect(post(s, chat())).rejects.toThrow();
    expect(s.gw.capture.written).toBe(6);
  });
});
