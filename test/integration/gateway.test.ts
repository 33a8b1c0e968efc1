import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { TraceReader } from '../../src/datasets/read-traces.js';
import { UserError } from '../../src/errors.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { gateway, type Gateway, type GatewayOptions } from '../../src/pipeline/serve/gateway.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import type { PromptPayload } from '../../src/trace/payloads.js';
import { tempDir } from '../helpers.js';
import { startChatBackend, type ChatBackend } from '../support/chat-backend.js';
import { gatewayProjects } from '../support/gateway-projects.js';
import { freshPostgresUrl } from '../support/postgres.js';

const GW_KEY = 'gw-client-key-0123456789abcdef';
const OTHER_KEY = 'gw-other-key-0123456789abcdef';
const BACKEND_KEY = 'backend-secret-key-abcdef0123456789';
const ENV = { ...process.env, GW_KEY_A: GW_KEY, GW_KEY_B: OTHER_KEY, BACKEND_KEY };

interface Project {
  backend: ChatBackend;
  loaded: LoadedConfig;
  rt: Runtime;
  gw: Gateway;
  base: string;
}

const track = gatewayProjects<Project>();

const WITH_KEYS = 'gateway: { api_keys_env: [GW_KEY_A, GW_KEY_B] }';

async function project(opts: GatewayOptions = {}, gatewayYaml = WITH_KEYS): Promise<Project> {
  const backend = await startChatBackend();
  const yaml = `models:
  scripted: { base_url: "${backend.baseUrl}", model: backend-model, api_key_env: BACKEND_KEY }
  other: { base_url: "${backend.baseUrl}", model: other-model }
agents:
  - { id: a, model: scripted }
${gatewayYaml}
`;
  const loaded = loadConfig({ cwd: tempDir({ 'massgen-rl.yaml': yaml }), env: ENV });
  const rt = new Runtime(loaded);
  const gw = await gateway(rt, { port: 0, flushMs: 20, ...opts });
  const p = { backend, loaded, rt, gw, base: `${gw.url}/v1` };
  track(p);
  return p;
}

function post(p: Project, body: unknown, headers: Record<string, string> = {}, key: string | null = GW_KEY) {
  const auth: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  return fetch(`${p.base}/chat/completions`, {
    method: 'POST',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...auth, ...headers },
  });
}

const HELLO = { model: 'scripted', messages: [{ role: 'user', content: 'Say hello' }], temperature: 0 };

/** The data of every event of an SSE body. */
function events(text: string): string[] {
  return text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice('data: '.length));
}

function spansOf(store: ReturnType<typeof openStore>, id: string) {
  return store.spans.list(id).map((s) => ({ ...s, payload: s.payload as PromptPayload }));
}

/** Stops the gateway (writing what it captured) and reads the gateway's rollouts with their spans. */
async function captured(p: Project) {
  await p.gw.stop();
  const store = openStore(p.loaded);
  try {
    return store.rollouts
      .list()
      .filter((r) => r.source === 'gateway')
      .reverse()
      .map((r) => ({ rollout: r, spans: spansOf(store, r.id) }));
  } finally {
    store.close();
  }
}

describe('the gateway on a scripted backend', () => {
  it('routes a model to its backend with its name and key, asks for logprobs and token ids, strips them', async () => {
    const p = await project();
    const res = await post(p, HELLO);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { model: string; choices: Record<string, unknown>[] };
    expect(body.model).toBe('backend-model-served');
    expect((body.choices[0]!.message as { content: string }).content).toBe('Hello');
    expect(body.choices[0]!.logprobs).toBeNull();
    expect(body.choices[0]!.token_ids).toBeUndefined();
    expect(body).not.toHaveProperty('prompt_token_ids');
    const seen = p.backend.seen[0]!;
    expect(seen.authorization).toBe(`Bearer ${BACKEND_KEY}`);
    expect(seen.body).toMatchObject({ model: 'backend-model', logprobs: true, return_token_ids: true });

    const askedRes = await post(p, { ...HELLO, logprobs: true, return_token_ids: true });
    const asked = (await askedRes.json()) as { choices: Record<string, unknown>[] };
    expect((asked.choices[0]!.logprobs as { content: unknown[] }).content).toHaveLength(2);
    expect(asked.choices[0]!.token_ids).toEqual([9906, 385]);

    await post(p, { ...HELLO, model: 'other' });
    expect(p.backend.seen[2]!.body.model).toBe('other-model');
    expect(p.backend.seen[2]!.authorization).toBeUndefined();
  });

  it('serves /v1/models (the logical names) and /health', async () => {
    const p = await project();
    const listed = await fetch(`${p.base}/models`, { headers: { authorization: `Bearer ${OTHER_KEY}` } });
    const models = (await listed.json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toEqual(['scripted', 'other']);
    const health = await fetch(`${p.gw.url}/health`);
    expect(await health.json()).toEqual({ status: 'ok' });
  });

  it('relays a stream chunk by chunk, without what the client did not ask for', async () => {
    const p = await project();
    p.backend.hold();
    const res = await post(p, { ...HELLO, stream: true });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    let text = '';
    // the backend holds the rest of the stream: what arrives now was passed on before the stream ended
    while (!text.includes('Hel')) text += new TextDecoder().decode((await reader.read()).value);
    expect(text).not.toContain('[DONE]');
    p.backend.release();
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += new TextDecoder().decode(r.value);
    const data = events(text);
    expect(data.at(-1)).toBe('[DONE]');
    type Chunk = { choices: { delta?: { content?: string }; logprobs?: unknown }[]; usage?: unknown };
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d) as Chunk);
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe('Hello');
    expect(text).not.toContain('token_ids');
    expect(chunks.every((c) => !c.usage && c.choices.every((x) => !x.logprobs))).toBe(true);
    expect(p.backend.seen[0]!.body.stream_options).toEqual({ include_usage: true });

    const usageAsked = { ...HELLO, stream: true, stream_options: { include_usage: true }, logprobs: true };
    const withUsage = await (await post(p, usageAsked)).text();
    const last = JSON.parse(events(withUsage).at(-2)!) as { choices: unknown[]; usage: { total_tokens: number } };
    expect(last.choices).toEqual([]);
    expect(last.usage.total_tokens).toBe(7);
    expect(withUsage).toContain('"logprob":-0.25');
  });

  it('answers OpenAI-shaped errors: 401 without a key or a wrong one, 404 unknown model, 400 bad request', async () => {
    const p = await project();
    type Body = { error: { message: string; type: string; param: string | null; code: string | null } };
    const error = async (res: Response) => ((await res.json()) as Body).error;
    const none = await post(p, HELLO, {}, null);
    expect(none.status).toBe(401);
    expect((await error(none)).code).toBe('invalid_api_key');
    expect((await post(p, HELLO, {}, 'wrong-key')).status).toBe(401);
    const unknown = await post(p, { ...HELLO, model: 'nope' });
    expect(unknown.status).toBe(404);
    expect(await error(unknown)).toMatchObject({
      param: 'model',
      code: 'model_not_found',
      type: 'invalid_request_error',
    });
    const notJson = await post(p, '{"model":');
    expect(notJson.status).toBe(400);
    expect((await error(notJson)).type).toBe('invalid_request_error');
    const noMessages = await post(p, { model: 'scripted', messages: [] });
    expect(noMessages.status).toBe(400);
    expect((await error(noMessages)).param).toBe('messages');
    const badStream = await post(p, { ...HELLO, stream: 'yes' });
    expect((await error(badStream)).param).toBe('stream');
    expect((await post(p, { messages: HELLO.messages })).status).toBe(400);
    expect(p.backend.seen).toHaveLength(0);
  });

  it('captures every call as a prompt span, grouped by X-Session-Id, then user, then client', async () => {
    const p = await project();
    const production = syncProduction(p.rt).id;
    await post(p, HELLO, { 'x-session-id': 'sess-1', 'x-agent-id': 'planner' });
    await (await post(p, { ...HELLO, stream: true }, { 'x-session-id': 'sess-1' })).text();
    await post(p, { ...HELLO, user: 'alice' });
    await post(p, HELLO);
    await post(p, HELLO, {}, OTHER_KEY);
    const rollouts = await captured(p);
    expect(rollouts.map((r) => [r.rollout.metadata.session, r.rollout.metadata.client, r.spans.length])).toEqual([
      ['sess-1', 'GW_KEY_A', 2],
      ['alice', 'GW_KEY_A', 1],
      [null, 'GW_KEY_A', 1],
      [null, 'GW_KEY_B', 1],
    ]);
    expect(rollouts.every((r) => r.rollout.status === 'completed' && r.rollout.resourceSetId === production)).toBe(
      true,
    );
    expect(rollouts[0]!.rollout.tokens).toBe(14);
    const [plain, streamed] = rollouts[0]!.spans;
    expect(plain!).toMatchObject({ type: 'prompt', name: 'chat', agent: 'planner' });
    expect(plain!.payload).toMatchObject({
      request: { model: 'scripted', messages: HELLO.messages, temperature: 0 },
      response: { content: 'Hello', tool_calls: [], finish_reason: 'stop' },
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
      token_ids: [9906, 385],
      prompt_token_ids: [1, 2, 3, 4, 5],
      logprobs: [
        { token: 'Hel', logprob: -0.25 },
        { token: 'lo', logprob: -0.5 },
      ],
      gateway: {
        client: 'GW_KEY_A',
        backend: 'scripted',
        backend_model: 'backend-model-served',
        stream: false,
        status: 200,
        resource_set_id: production,
      },
    });
    expect(plain!.payload.latency_ms).toBeGreaterThan(0);
    expect(plain!.payload.ttft_ms).toBeUndefined();
    expect(streamed!.payload).toMatchObject({
      response: { content: 'Hello' },
      token_ids: [9906, 385],
      gateway: { stream: true },
    });
    expect(streamed!.payload.logprobs).toHaveLength(2);
    expect(streamed!.payload.ttft_ms).toBeGreaterThanOrEqual(0);
  });

  it('writes nothing before its batch is due, everything on stop; no key is ever stored', async () => {
    const p = await project({ flushMs: 60_000, batchSize: 1000 });
    const leak = { ...HELLO, messages: [{ role: 'user', content: `my key is ${GW_KEY} and ${BACKEND_KEY}` }] };
    for (let i = 0; i < 5; i++) await post(p, i === 0 ? leak : HELLO, { 'x-session-id': `s${i % 2}` });
    const before = openStore(p.loaded);
    expect(before.stats().counts.spans).toBe(0);
    before.close();
    const rollouts = await captured(p);
    expect(rollouts.map((r) => r.spans.length)).toEqual([3, 2]);
    expect(p.gw.capture).toMatchObject({ captured: 5, written: 5, pending: 0, batches: 1 });
    const stored = JSON.stringify(rollouts[0]!.spans[0]!.payload.request.messages);
    expect(stored).toContain('my key is [REDACTED] and [REDACTED]');
    await p.rt.close();
    const { storePath } = p.loaded.paths;
    for (const file of [storePath, `${storePath}-wal`].filter((f) => fs.existsSync(f))) {
      const bytes = fs.readFileSync(file).toString('latin1');
      expect(bytes).not.toContain(GW_KEY);
      expect(bytes).not.toContain(BACKEND_KEY);
    }
  });

  it('captures into a PostgreSQL store the same way, in batches', async () => {
    const p = await project({ batchSize: 2 }, `${WITH_KEYS}\nstore: { url: "${freshPostgresUrl()}" }`);
    for (let i = 0; i < 5; i++) {
      await (await post(p, i % 2 ? { ...HELLO, stream: true } : HELLO, { 'x-session-id': `s${i % 2}` })).text();
    }
    const rollouts = await captured(p);
    expect(rollouts.map((r) => [r.rollout.metadata.session, r.rollout.status, r.spans.length])).toEqual([
      ['s0', 'completed', 3],
      ['s1', 'completed', 2],
    ]);
    expect(rollouts[1]!.spans.map((s) => s.payload.token_ids)).toEqual([
      [9906, 385],
      [9906, 385],
    ]);
  });

  it('leaves its sessions out of datasets: an open one holds back no later collect rollout', async () => {
    const p = await project();
    await post(p, HELLO, { 'x-session-id': 'open' });
    while (p.gw.capture.written < 1) await new Promise((r) => setTimeout(r, 10));
    const store = openStore(p.loaded);
    try {
      expect(store.rollouts.list()[0]).toMatchObject({ source: 'gateway', status: 'running' });
      const id = store.rollouts.start({ source: 'collect' });
      store.rollouts.finish(id, { status: 'completed' });
      const reader = new TraceReader(store, 0);
      expect([...reader.pages()].flat().map((t) => t.rollout.id)).toEqual([id]);
      expect(reader.stoppedAt).toBeNull();
    } finally {
      store.close();
    }
  });

  it('starts a new session for a client idle past the timeout', async () => {
    const p = await project({ sessionIdleMs: 100 });
    await post(p, HELLO);
    await post(p, HELLO);
    await new Promise((r) => setTimeout(r, 250));
    await post(p, HELLO);
    const rollouts = await captured(p);
    expect(rollouts.map((r) => r.spans.length)).toEqual([2, 1]);
  });

  it('without client keys, serves loopback only and refuses to listen elsewhere', async () => {
    const p = await project({}, '');
    expect(p.gw.open).toBe(true);
    expect((await post(p, HELLO, {}, null)).status).toBe(200);
    await expect(gateway(p.rt, { host: '0.0.0.0', port: 0 })).rejects.toThrow(UserError);
  });

  it('a port in use is a UserError naming the address and the settings, not an internal error', async () => {
    const p = await project();
    const port = Number(new URL(p.gw.url).port);
    const second = gateway(p.rt, { port, flushMs: 20 });
    await expect(second).rejects.toThrow(UserError);
    await expect(second).rejects.toThrow(`gateway: cannot listen on 127.0.0.1:${port}: the address is in use`);
    expect((await post(p, HELLO)).status).toBe(200); // the first one is untouched
  });
});

describe('the gateway names sessions and agents the ways a client can', () => {
  it('metadata.session_id names a session; an alias routes to its model and names the agent', async () => {
    const p = await project(
      {},
      `${WITH_KEYS.slice(0, -2)}, aliases: { planner: { model: scripted, agent: planner }, plain: { model: other } } }`,
    );
    const listed = (await (
      await fetch(`${p.base}/models`, { headers: { authorization: `Bearer ${GW_KEY}` } })
    ).json()) as {
      data: { id: string }[];
    };
    expect(listed.data.map((m) => m.id)).toEqual(['scripted', 'other', 'planner', 'plain']);
    expect((await post(p, { ...HELLO, model: 'planner', metadata: { session_id: 'm-1' } })).status).toBe(200);
    expect(
      (await post(p, { ...HELLO, model: 'plain' }, { 'x-session-id': 'm-1', 'x-agent-id': 'critic' })).status,
    ).toBe(200);
    expect(p.backend.seen.map((s) => s.body.model)).toEqual(['backend-model', 'other-model']);
    const [rollout] = await captured(p);
    expect(rollout!.rollout.metadata).toMatchObject({ session: 'm-1', session_from: 'metadata' });
    expect(rollout!.spans.map((s) => s.agent)).toEqual(['planner', 'critic']);
  });

  it('a base URL naming the session and agent works as the headers do; bad percent-encoding is a 400', async () => {
    const p = await project();
    const at = (base: string) =>
      fetch(`${base}/chat/completions`, {
        method: 'POST',
        body: JSON.stringify(HELLO),
        headers: { authorization: `Bearer ${GW_KEY}`, 'content-type': 'application/json' },
      });
    expect((await at(`${p.gw.url}/session/run%201/agent/critic/v1`)).status).toBe(200);
    const bad = await at(`${p.gw.url}/session/%E0%A4/agent/critic/v1`);
    expect([bad.status, ((await bad.json()) as { error: { code: string } }).error.code]).toEqual([400, 'invalid_url']);
    expect((await at(`${p.gw.url}/prefix/session/x/v1`)).status).toBe(404);
    const [rollout] = await captured(p);
    expect(rollout!.rollout.metadata).toMatchObject({ session: 'run 1', session_from: 'header' });
    expect(rollout!.spans.map((s) => s.agent)).toEqual(['critic']);
  });

  it('an alias of an unknown model, or one that shadows a model, is a config error naming the key', () => {
    const bad =
      `models:\n  m: { base_url: "http://127.0.0.1:9/v1", model: x }\nagents:\n  - { id: a, model: m }\n`
      + 'gateway: { aliases: { m: { model: m }, n: { model: nope } } }\n';
    expect(() => loadConfig({ cwd: tempDir({ 'massgen-rl.yaml': bad }) })).toThrow(
      /gateway\.aliases\.m[^]*gateway\.aliases\.n\.model/,
    );
  });
});
