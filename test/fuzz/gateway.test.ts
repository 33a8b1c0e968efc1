import fc from 'fast-check';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { gateway, type Gateway } from '../../src/pipeline/serve/gateway.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { tempDir } from '../helpers.js';
import { startFuzzBackend, type FuzzBackend } from './support/gateway-backend.js';
import { gatewayCase, type AuthMode, type GatewayCase } from './support/gateway-cases.js';
import { neverRead, rawExchange, type RawReply } from './support/gateway-client.js';
import { SETTINGS } from './support/settings.js';

/**
 * The gateway under hostile clients and a misbehaving backend: every case gets an OpenAI-shaped answer
 * (a 4xx naming `param`, or the backend's own error passed on) or a clean close, never a stack or a key,
 * and the next request is served. Limits are set low so the slow and greedy cases finish quickly.
 * Seeded like the CLI fuzz (FUZZ_SEED, FUZZ_CASES; FUZZ_ONLY=gateway:N re-runs case N).
 */
const GW_KEY = 'gw-fuzz-client-key-0123456789';
const BACKEND_KEY = 'sk-backend-fuzz-secret-abcdefghij';
const LIMITS = {
  max_body_bytes: 64 * 1024,
  max_header_bytes: 8 * 1024,
  max_headers: 40,
  max_connections: 64,
  max_connections_per_client: 24,
  request_timeout_s: 1,
  write_timeout_s: 1,
};
const CASES = SETTINGS.only
  ? SETTINGS.only.target === 'gateway'
    ? [SETTINGS.only.index]
    : []
  : Array.from({ length: Math.max(20, Math.round(SETTINGS.cases * 1.25)) }, (_, i) => i);

let backend: FuzzBackend;
let rt: Runtime;
let gw: Gateway;
let port: number;
let storeFile: string;
const counts = new Map<string, number>();

beforeAll(async () => {
  backend = await startFuzzBackend();
  const dir = tempDir({
    'massgen-rl.yaml': `models:
  scripted: { base_url: "${backend.baseUrl}", model: fuzz-model, api_key_env: BACKEND_KEY, timeout_ms: 1000, max_retries: 0 }
  probe: { base_url: "${backend.baseUrl}", model: probe-model, api_key_env: BACKEND_KEY }
agents:
  - { id: a, model: scripted }
gateway: { api_keys_env: [GW_KEY], ${Object.entries(LIMITS)
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ')} }
`,
  });
  rt = new Runtime(loadConfig({ cwd: dir, env: { ...process.env, GW_KEY, BACKEND_KEY } }));
  storeFile = rt.store().path;
  gw = await gateway(rt, { port: 0, flushMs: 20 });
  port = Number(new URL(gw.url).port);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await rt?.close();
  await backend?.close();
  console.log(`gateway fuzz (seed ${SETTINGS.seed}): ${JSON.stringify(Object.fromEntries([...counts].sort()))}`);
});

function caseOf(index: number): GatewayCase {
  return fc.sample(gatewayCase, { seed: (SETTINGS.seed * 31 + 5_000_011 + index * 7919) | 0, numRuns: 1 })[0]!;
}

function authHeader(mode: AuthMode): Record<string, string> {
  if (mode === 'none') return {};
  if (mode === 'wrong') return { authorization: 'Bearer not-the-key' };
  if (mode === 'malformed') return { authorization: `Basic ${GW_KEY}` };
  return { authorization: `Bearer ${GW_KEY}` };
}

const STACK = /\n\s+at \S|node:internal|\.[jt]s:\d+:\d+/;

/** What is wrong with one answer; `faults` are the statuses the backend was told to cause. */
function judge(status: number | null, body: string, faults: number[] = []): string[] {
  const out: string[] = [];
  if (STACK.test(body)) out.push('a stack in the response');
  if (body.includes(BACKEND_KEY) || body.includes(GW_KEY)) out.push('a key in the response');
  if (status === null) return out;
  // a backend made to fail earlier is held back for a while (its replica marked down): a 503 saying so is right
  const heldBack = status === 503 && body.includes('"code":"backend_down"');
  if (status >= 500 && !faults.includes(status) && !heldBack) out.push(`status ${status}: ${body.slice(0, 200)}`);
  if (status >= 400) {
    let error: Record<string, unknown> | undefined;
    try {
      error = (JSON.parse(body) as { error?: Record<string, unknown> }).error;
    } catch {
      /* judged below */
    }
    if (typeof error?.message !== 'string' || !('param' in error))
      out.push(`${status} not OpenAI-shaped: ${body.slice(0, 200)}`);
  }
  return out;
}

const FAULTS: Record<string, number[]> = { 'echo-key': [502], 'error-500': [500], hang: [504], cut: [502] };

async function send(body: string | Buffer, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, text: await res.text() };
}

const chatRequest = (body: string) =>
  `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${GW_KEY}\r\n`
  + `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const VALID = JSON.stringify({ model: 'probe', messages: [{ role: 'user', content: 'hi' }] });

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

async function runCase(c: GatewayCase): Promise<string[]> {
  switch (c.kind) {
    case 'body': {
      const body = c.body as Record<string, unknown>;
      if (typeof body === 'object' && body !== null) body.stream = c.stream;
      const r = await send(JSON.stringify(body), authHeader(c.auth));
      const mode = body?.fuzz_backend;
      return judge(r.status, r.text, typeof mode === 'string' ? FAULTS[mode] : undefined);
    }
    case 'text': {
      const bytes = Buffer.from(c.text, 'utf8');
      const sent = c.invalidUtf8
        ? Buffer.concat([
            bytes.subarray(0, bytes.length >> 1),
            Buffer.from([0xc3, 0x28, 0xff]),
            bytes.subarray(bytes.length >> 1),
          ])
        : bytes;
      const r = await send(sent, authHeader(c.auth));
      const out = judge(r.status, r.text);
      if (c.invalidUtf8 && r.status !== 400 && r.status !== 401 && r.status !== 413)
        out.push(`invalid UTF-8 got ${r.status}`);
      return out;
    }
    case 'huge': {
      const body = `{"model":"scripted","messages":[{"role":"user","content":"${'a'.repeat(c.bytes)}"}]}`;
      const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${GW_KEY}\r\n`;
      const framing = c.declared ? `Content-Length: ${body.length}\r\n\r\n` : 'Transfer-Encoding: chunked\r\n\r\n';
      const payload = c.declared ? body : `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
      const r = await rawExchange(port, [head + framing, payload]);
      return [
        ...judge(r.status, r.body),
        ...(r.status === 413 || r.closed ? [] : [`over the body limit got ${r.status}`]),
      ];
    }
    case 'raw': {
      const r = await rawExchange(port, [c.request]);
      return judgeRaw(r);
    }
    case 'slow': {
      const parts =
        c.part === 'headers'
          ? ['POST /v1/chat/completions HTTP/1.1\r\n', ...'X-Slow: abcdefghijklmnopqrstuvwxyz\r\n'.split('')]
          : [
              `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${GW_KEY}\r\nContent-Length: 200\r\n\r\n`,
              ...'{"model":"scripted","messages":[{"role":"user","content":"trickle"}]}'.split(''),
            ];
      const r = await rawExchange(port, parts, { gapMs: 150, waitMs: 6000 });
      const out = judgeRaw(r);
      if (r.status !== 408 && !r.closed) out.push(`a trickled request got ${r.status} and stayed open`);
      if (r.ms > LIMITS.request_timeout_s * 1000 + 4000)
        out.push(`a trickled request took ${Math.round(r.ms)} ms to end`);
      return out;
    }
    case 'reader': {
      const body = JSON.stringify({
        model: 'scripted',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
        fuzz_backend: 'long',
        fuzz_chunks: c.chunks,
      });
      const close = neverRead(port, chatRequest(body));
      await until(() => backend.stats.streaming > 0, 3000);
      const ended = await until(() => backend.stats.streaming === 0, LIMITS.write_timeout_s * 1000 + 8000);
      close();
      return ended ? [] : ['a client that never reads held its backend stream past write_timeout_s'];
    }
    case 'disconnect': {
      const body = JSON.stringify({
        model: 'scripted',
        messages: [{ role: 'user', content: 'x' }],
        stream: c.stream,
        fuzz_backend: c.stream ? 'long' : undefined,
        fuzz_chunks: 400,
      });
      const r = await rawExchange(port, [chatRequest(body)], { readBytes: c.afterBytes });
      const down = r.status === 503 && r.body.includes('backend_down');
      return r.status !== null && r.status >= 400 && !down ? [`a valid request got ${r.status}`] : [];
    }
    case 'burst': {
      const n = LIMITS.max_connections_per_client + c.extra;
      let release!: () => void;
      const holdUntil = new Promise<void>((r) => (release = r));
      const request = `GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${GW_KEY}\r\n\r\n`;
      // every connection stays open until all have their answer: they are open at once
      const replies = await Promise.all(
        Array.from({ length: n }, () => rawExchange(port, [request], { waitMs: 1500, holdUntil })),
      );
      release();
      const out = replies.flatMap((r) => judgeRaw(r));
      const refused = replies.filter((r) => r.status === 429 || (r.status === null && r.closed)).length;
      if (refused < c.extra)
        out.push(`${n} connections at once: only ${refused} refused (limit ${LIMITS.max_connections_per_client})`);
      return out;
    }
  }
}

function judgeRaw(r: RawReply): string[] {
  return judge(r.status, r.body);
}

/** The gateway still answers: the next request after every case (to another model: a backend made to fail is
 * rightly held back for a while, its replica marked down). */
async function probe(): Promise<string[]> {
  try {
    const r = await send(VALID, authHeader('key'));
    return r.status === 200 ? [] : [`the next request got ${r.status}: ${r.text.slice(0, 200)}`];
  } catch (err) {
    return [`the next request failed: ${(err as Error).message}`];
  }
}

describe('fuzz: the gateway over HTTP', () => {
  it(
    "answers every hostile request in OpenAI's shape or closes cleanly, and serves the next",
    { timeout: 4 * 3600_000 },
    async () => {
      const rssBefore = process.memoryUsage().rss;
      const failures: string[] = [];
      for (const index of CASES) {
        const c = caseOf(index);
        counts.set(c.kind, (counts.get(c.kind) ?? 0) + 1);
        let found: string[];
        try {
          found = [...(await runCase(c)), ...(await probe())];
        } catch (err) {
          found = [`the case threw: ${(err as Error).message}`];
        }
        if (found.length) {
          const shown = JSON.stringify(c).slice(0, 400);
          failures.push(`gateway:${index} (seed ${SETTINGS.seed}): ${found.join('; ')} — ${shown}`);
        }
      }
      const grownMb = (process.memoryUsage().rss - rssBefore) / 2 ** 20;
      if (grownMb > 300) failures.push(`resident memory grew ${Math.round(grownMb)} MB over the run`);
      await gw.stop();
      const stored = Buffer.concat(
        ['', '-wal'].filter((x) => fs.existsSync(storeFile + x)).map((x) => fs.readFileSync(storeFile + x)),
      );
      for (const key of [GW_KEY, BACKEND_KEY])
        if (stored.includes(key)) failures.push(`the store holds the key ${key.slice(0, 8)}…`);
      expect(failures).toEqual([]);
    },
  );
});
