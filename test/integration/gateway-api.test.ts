import { describe, expect, it } from 'vitest';
import { loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { gateway, type Gateway, type GatewayOptions } from '../../src/pipeline/serve/gateway.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { runCli, tempDir } from '../helpers.js';
import { startChatBackend, type ChatBackend } from '../support/chat-backend.js';
import { gatewayProjects } from '../support/gateway-projects.js';

const GW_KEY = 'gw-client-key-0123456789abcdef';
const OTHER_KEY = 'gw-other-key-0123456789abcdef';
const ENV = { ...process.env, GW_KEY_A: GW_KEY, GW_KEY_B: OTHER_KEY };

interface Project {
  backend: ChatBackend;
  dir: string;
  loaded: LoadedConfig;
  rt: Runtime;
  gw: Gateway;
}

const track = gatewayProjects<Project>();

async function project(opts: GatewayOptions = {}, dir?: string): Promise<Project> {
  const backend = await startChatBackend();
  const yaml = `models:
  scripted: { base_url: "${backend.baseUrl}", model: backend-model }
agents:
  - { id: a, model: scripted }
rewards: { weights: { exact: 1, human: 0.5 } }
gateway: { api_keys_env: [GW_KEY_A, GW_KEY_B] }
`;
  const where = dir ?? tempDir({ 'massgen-rl.yaml': yaml });
  const loaded = loadConfig({ cwd: where, env: ENV, overrides: [`models.scripted.base_url=${backend.baseUrl}`] });
  const rt = new Runtime(loaded);
  const gw = await gateway(rt, { port: 0, flushMs: 10, ...opts });
  const p = { backend, dir: where, loaded, rt, gw };
  track(p);
  return p;
}

function call(p: Project, route: string, body: unknown, headers: Record<string, string> = {}, key = GW_KEY) {
  return fetch(`${p.gw.url}/v1/${route}`, {
    method: 'POST',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
  });
}

const HELLO = { model: 'scripted', messages: [{ role: 'user', content: 'Say hello' }] };
type ErrorBody = { error: { param: string | null; code: string | null; type: string } };

async function stored(p: Project) {
  const store = openStore(p.loaded);
  try {
    return store.rollouts
      .list()
      .filter((r) => r.source === 'gateway')
      .reverse()
      .map((r) => ({ rollout: r, spans: store.spans.list(r.id), rewards: store.rewards.list(r.id) }));
  } finally {
    store.close();
  }
}

describe('GET /metrics', () => {
  it('counts requests, latency, time to first token, tokens and the capture in Prometheus text', async () => {
    const p = await project();
    await call(p, 'chat/completions', HELLO);
    await (await call(p, 'chat/completions', { ...HELLO, stream: true }, { 'x-session-id': 's' })).text();
    await call(p, 'embeddings', { model: 'scripted', input: ['a', 'b'] });
    await call(p, 'chat/completions', { ...HELLO, model: 'nope' });
    while (p.gw.capture.written < 3) await new Promise((r) => setTimeout(r, 10));
    // loopback scrapers need no key; /v1 routes still do
    expect((await fetch(`${p.gw.url}/v1/models`)).status).toBe(401);
    const res = await fetch(`${p.gw.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await res.text();
    for (const line of text.trimEnd().split('\n')) {
      expect(line).toMatch(/^(# (HELP|TYPE) \w+ .+|\w+(\{(\w+="[^"]*",?)+\})? [-+\dInfNa.e]+)$/);
    }
    const value = (series: string) =>
      Number(
        text
          .split('\n')
          .find((l) => l.startsWith(`${series} `))
          ?.split(' ')[1],
      );
    const chat = 'massgen_gateway_requests_total{route="/v1/chat/completions"';
    expect(value(`${chat},model="scripted",status="200"}`)).toBe(2);
    expect(value(`${chat},model="",status="404"}`)).toBe(1);
    expect(value('massgen_gateway_requests_total{route="/v1/embeddings",model="scripted",status="200"}')).toBe(1);
    expect(value('massgen_gateway_requests_total{route="/v1/models",model="",status="401"}')).toBe(1);
    const latency = 'massgen_gateway_request_duration_seconds';
    expect(value(`${latency}_count{route="/v1/chat/completions",model="scripted"}`)).toBe(2);
    expect(value(`${latency}_bucket{route="/v1/chat/completions",model="scripted",le="+Inf"}`)).toBe(2);
    expect(value('massgen_gateway_time_to_first_token_seconds_count{model="scripted"}')).toBe(1);
    expect(value('massgen_gateway_prompt_tokens_total{model="scripted"}')).toBe(5 + 5 + 6);
    expect(value('massgen_gateway_completion_tokens_total{model="scripted"}')).toBe(4);
    expect(value('massgen_gateway_captured_rows_total')).toBe(3);
    expect(value('massgen_gateway_capture_queue_depth')).toBe(0);
    expect(value('massgen_gateway_capture_write_errors_total')).toBe(0);
    expect(value('massgen_gateway_capture_unjournaled_total')).toBe(0);
    expect(value('massgen_gateway_open_sessions')).toBe(2);
    expect((await fetch(`${p.gw.url}/metrics`, { method: 'POST' })).status).toBe(405);
  });
});

describe('POST /v1/embeddings', () => {
  it("routes to the backend's /embeddings, answers as it did, captures a span without the vectors", async () => {
    const p = await project();
    const res = await call(p, 'embeddings', { model: 'scripted', input: ['one', 'two'] }, { 'x-agent-id': 'rag' });
    expect(res.status).toBe(200);
    const callId = res.headers.get('x-request-id');
    expect(callId).toMatch(/^call_/);
    const body = (await res.json()) as { data: { embedding: number[] }[]; usage: { prompt_tokens: number } };
    expect(body.data.map((d) => d.embedding)).toEqual([
      [0, 1, 0, 0],
      [1, 1, 0, 0],
    ]);
    expect(p.backend.seen[0]!.body).toEqual({ model: 'backend-model', input: ['one', 'two'] });
    const asB64 = { model: 'scripted', input: 'x', encoding_format: 'base64' };
    const b64 = await (await call(p, 'embeddings', asB64)).json();
    const bytes = Buffer.from((b64 as { data: { embedding: string }[] }).data[0]!.embedding, 'base64');
    const vector = new Float32Array(Uint8Array.from(bytes).buffer);
    expect([...vector]).toEqual([0, 1, 0, 0]);
    expect((await call(p, 'embeddings', { model: 'scripted', input: [[1, 2, 3]] })).status).toBe(200);
    const refused = await call(p, 'embeddings', { model: 'scripted', input: 'x', dimensions: 2 });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as ErrorBody).error.param).toBe('dimensions');
    await p.gw.stop();
    const [r] = await stored(p);
    expect(r!.spans).toHaveLength(4);
    expect(r!.spans[0]).toMatchObject({
      type: 'message',
      name: 'embeddings',
      agent: 'rag',
      payload: {
        kind: 'embeddings',
        turn_id: callId,
        request: { model: 'scripted', input_count: 2, input: ['one', 'two'] },
        response: { count: 2, dimensions: 4 },
        usage: { prompt_tokens: 6 },
        gateway: { status: 200 },
      },
    });
    expect(r!.spans[1]!.payload).toMatchObject({ request: { encoding_format: 'base64' }, response: { dimensions: 4 } });
    expect(r!.spans[2]!.payload).toMatchObject({ request: { input_count: 1, input: [{ tokens: 3 }] } });
    expect(r!.spans[3]!.payload).toMatchObject({ response: null, gateway: { status: 400 } });
    expect(JSON.stringify(r!.spans.map((s) => s.payload))).not.toContain('"embedding"');
    expect(r!.rollout.tokens).toBe(6 + 3 + 3);
  });

  it('refuses bad requests with the param at fault, before any backend sees them', async () => {
    const p = await project();
    const cases: [unknown, string | null, number?][] = [
      ['{"model"', null],
      [{ input: 'x' }, 'model'],
      [{ model: 'scripted' }, 'input'],
      [{ model: 'scripted', input: [] }, 'input'],
      [{ model: 'scripted', input: ['a', 3] }, 'input'],
      [{ model: 'scripted', input: '' }, 'input'],
      [{ model: 'scripted', input: [[1, -2]] }, 'input'],
      [{ model: 'scripted', input: 'x', encoding_format: 'int8' }, 'encoding_format'],
      [{ model: 'scripted', input: 'x', dimensions: 0 }, 'dimensions'],
      [{ model: 'scripted', input: 'x', user: 7 }, 'user'],
      [{ model: 'nope', input: 'x' }, 'model', 404],
    ];
    for (const [body, param, status] of cases) {
      const res = await call(p, 'embeddings', body);
      const got = [res.status, ((await res.json()) as ErrorBody).error.param];
      expect(got, JSON.stringify(body)).toEqual([status ?? 400, param]);
    }
    expect((await call(p, 'embeddings', { model: 'scripted', input: 'x' }, {}, 'wrong')).status).toBe(401);
    expect(p.backend.seen).toHaveLength(0);
  });
});

describe('POST /v1/feedback', () => {
  it('holds feedback on an open session until it closes, then stores it with the rollout', async () => {
    const p = await project();
    await call(p, 'chat/completions', HELLO, { 'x-session-id': 'conv-1', 'x-agent-id': 'writer' });
    const res = await call(p, 'feedback', { session_id: 'conv-1', score: 1, agent: 'writer', note: 'good draft' });
    expect(res.status).toBe(202);
    const body = (await res.json()) as { rollout_id: string; status: string };
    expect(body).toMatchObject({ object: 'feedback', status: 'pending', session_id: 'conv-1', total_reward: null });
    expect((await call(p, 'feedback', { session_id: 'conv-1', score: -0.5 })).status).toBe(202);
    await p.gw.stop();
    const [r] = await stored(p);
    expect(r!.rollout).toMatchObject({ id: body.rollout_id, status: 'completed', totalReward: -0.25 });
    expect(r!.rewards.map((w) => [w.family, w.channel, w.agent, w.value, w.reason])).toEqual([
      ['human', 'agent', 'writer', 1, 'good draft'],
      ['human', 'rollout', null, -0.5, 'feedback from GW_KEY_A through the gateway'],
    ]);
    expect(r!.spans.map((s) => [s.seq, s.type, s.name])).toEqual([
      [1, 'prompt', 'chat'],
      [2, 'reward', 'human'],
      [3, 'reward', 'human'],
    ]);
  });

  it('applies feedback on a finished session at once, by call id or session id, across a restart', async () => {
    const p = await project({ sessionIdleMs: 50 });
    const chat = await call(p, 'chat/completions', HELLO, { 'x-session-id': 'conv-2' });
    const callId = chat.headers.get('x-request-id')!;
    while ((await stored(p))[0]?.rollout.status !== 'completed') await new Promise((r) => setTimeout(r, 20));
    const res = await call(p, 'feedback', { call_id: callId, score: 1 });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'applied', call_id: callId, total_reward: 0.5 });
    await p.gw.stop();
    await p.rt.close();
    // a later gateway on the same store finds the closed session and the call in the store
    const again = await project({}, p.dir);
    const bySession = await call(again, 'feedback', { session_id: 'conv-2', score: 0 });
    expect(await bySession.json()).toMatchObject({ total_reward: 0.25 });
    expect((await call(again, 'feedback', { call_id: callId, score: 1 })).status).toBe(200);
    expect((await call(again, 'feedback', { call_id: callId, score: 1 }, {}, OTHER_KEY)).status).toBe(404);
    const [r] = await stored(again);
    expect(r!.rewards.map((w) => w.value)).toEqual([1, 0, 1]);
    expect(r!.rollout.totalReward).toBeCloseTo(0.5 * (2 / 3));
  });

  it("refuses bad input with its param (400) and an unknown or other client's session or call (404)", async () => {
    const p = await project();
    await call(p, 'chat/completions', HELLO, { 'x-session-id': 'mine', 'x-agent-id': 'writer' });
    const cases: [unknown, number, string | null][] = [
      ['not json', 400, null],
      [{ score: 1 }, 400, 'session_id'],
      [{ session_id: 'mine', call_id: 'c', score: 1 }, 400, 'call_id'],
      [{ session_id: 'mine' }, 400, 'score'],
      [{ session_id: 'mine', score: '1' }, 400, 'score'],
      [{ session_id: 'mine', score: 1, agent: 'editor' }, 400, 'agent'],
      [{ session_id: 'mine', score: 1, note: 5 }, 400, 'note'],
      [{ session_id: 'mine', score: 1, note: 'x'.repeat(4001) }, 400, 'note'],
      [{ session_id: 'other', score: 1 }, 404, 'session_id'],
      [{ call_id: 'call_nope', score: 1 }, 404, 'call_id'],
    ];
    for (const [body, status, param] of cases) {
      const res = await call(p, 'feedback', body);
      const got = [res.status, ((await res.json()) as ErrorBody).error.param];
      expect(got, JSON.stringify(body)).toEqual([status, param]);
    }
    expect((await call(p, 'feedback', { session_id: 'mine', score: 1 }, {}, OTHER_KEY)).status).toBe(404);
    // a session another gateway on this store still has open
    p.rt.store().rollouts.start({ source: 'gateway', metadata: { client: 'GW_KEY_A', session: 'theirs' } });
    const elsewhere = await call(p, 'feedback', { session_id: 'theirs', score: 1 });
    expect([elsewhere.status, ((await elsewhere.json()) as ErrorBody).error.code]).toEqual([409, 'session_open']);
    await p.gw.stop();
    expect((await stored(p))[0]!.rewards).toEqual([]);
  });

  it('massgen-rl feedback credits a captured rollout or one of its agents, and refuses one still open', async () => {
    const p = await project({ flushMs: 10 });
    await call(p, 'chat/completions', HELLO, { 'x-session-id': 'cli', 'x-agent-id': 'planner' });
    while (p.gw.capture.written < 1) await new Promise((r) => setTimeout(r, 10));
    const id = (await stored(p))[0]!.rollout.id;
    const env = { GW_KEY_A: GW_KEY, GW_KEY_B: OTHER_KEY };
    const early = await runCli(['feedback', id, '--score', '1'], { cwd: p.dir, env });
    expect(early.exitCode).toBe(2);
    expect(early.stderr).toMatch(/gateway session still open/);
    await p.gw.stop();
    const args = ['feedback', id.slice(0, 12), '--score', '1', '--agent', 'planner', '--json'];
    const ok = await runCli(args, { cwd: p.dir, env });
    expect(ok.exitCode, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ rolloutId: id, reward: { agent: 'planner', value: 1 } });
    const bad = await runCli(['feedback', id, '--score', '1', '--agent', 'zed'], { cwd: p.dir, env });
    expect(bad.stderr).toMatch(/has no agent "zed"; agents: planner/);
    expect((await runCli(['feedback', id, '--score', '-1'], { cwd: p.dir, env })).exitCode).toBe(0);
    expect((await stored(p))[0]!.rollout.totalReward).toBeCloseTo(-0.5);
  });
});
