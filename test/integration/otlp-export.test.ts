import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { gateway } from '../../src/pipeline/serve/gateway.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { openStore, storeOptions } from '../../src/runtime/store.js';
import type { Store } from '../../src/store/index.js';
import { GATEWAY_SOURCE } from '../../src/store/rollouts.js';
import { exportPending, targetKey, type OtlpTarget } from '../../src/telemetry/otlp-export.js';
import { OtlpFollower } from '../../src/telemetry/otlp-follower.js';
import { spanIdOf, traceIdOf } from '../../src/telemetry/span-map.js';
import { ROOT, tempDir } from '../helpers.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';
import { BACKENDS, freshPostgresUrl } from '../support/postgres.js';
import { startScriptedServer } from '../support/scripted-server.js';
import { teamCollect, type TeamCollect } from '../support/team-collect.js';

const target = (endpoint: string, o: Partial<OtlpTarget> = {}): OtlpTarget => ({
  endpoint,
  protocol: 'protobuf',
  headers: {},
  project: 'otlp-test',
  batch_rollouts: 2,
  timeout_ms: 3000,
  ...o,
});

describe('rollouts exported as OTLP spans', () => {
  let team: TeamCollect | undefined;
  let receiver: OtlpReceiver | undefined;
  let store: Store | undefined;
  afterEach(async () => {
    store?.close();
    await receiver?.close();
    await team?.server.close();
  });

  it('sends each finished rollout as a tree of GenAI/OpenInference spans, once, and resumes after a refusal', async () => {
    team = await teamCollect();
    receiver = await startOtlpReceiver();
    store = openStore(team.loaded);
    const rollouts = store.rollouts.list({});
    expect(rollouts).toHaveLength(3);

    const first = await exportPending(store, target(receiver.url));
    expect(first).toMatchObject({ rollouts: 3, requests: 2, failed: null });
    expect(receiver.requests.map((r) => r.contentType)).toEqual(['application/x-protobuf', 'application/x-protobuf']);
    for (const r of rollouts) {
      const spans = [...receiver.spans.values()].filter((s) => s.traceId === traceIdOf(r.id));
      const stored = store.spans.list(r.id);
      expect(spans).toHaveLength(stored.length + 1);
      const root = spans.find((s) => s.spanId === spanIdOf(r.id, null))!;
      expect(root).toMatchObject({ parentSpanId: null, resource: { 'service.name': 'otlp-test' } });
      expect(root.attributes).toMatchObject({
        'massgen_rl.rollout_id': r.id,
        'massgen_rl.task_id': r.taskId,
        'output.value': r.finalAnswer,
        'massgen_rl.reward.exact': expect.any(Number),
      });
      // Every span hangs under a span of its own trace; the model calls carry their usage and messages.
      const ids = new Set(spans.map((s) => s.spanId));
      for (const s of spans) if (s !== root) expect(ids.has(s.parentSpanId!)).toBe(true);
      const calls = stored.filter((s) => s.type === 'prompt');
      expect(calls.length).toBeGreaterThan(0);
      for (const call of calls) {
        const sent = receiver.spans.get(spanIdOf(r.id, call.seq))!;
        const usage = (call.payload as { usage: { prompt_tokens: number } }).usage;
        expect(sent.name).toBe(`chat ${(call.payload as { request: { model: string } }).request.model}`);
        expect(sent.kind).toBe(3); // CLIENT
        expect(sent.attributes).toMatchObject({
          'openinference.span.kind': 'LLM',
          'gen_ai.operation.name': 'chat',
          'gen_ai.usage.input_tokens': usage.prompt_tokens,
          'llm.token_count.prompt': usage.prompt_tokens,
          'gen_ai.agent.name': call.agent,
          'llm.input_messages.0.message.role': 'system',
        });
        expect(JSON.parse(sent.attributes['gen_ai.input.messages'] as string)[0].parts[0].type).toBe('text');
        expect(sent.endMs).toBeGreaterThanOrEqual(sent.startMs);
      }
      expect(spans.filter((s) => s.attributes['openinference.span.kind'] === 'CHAIN').length).toBeGreaterThan(1);
    }

    // Run again: nothing is pending. Forgotten, then refused half-way: the acknowledged batch stays sent.
    expect(await exportPending(store, target(receiver.url))).toMatchObject({ rollouts: 0, requests: 0 });
    expect(store.otlpExports.forget(targetKey(receiver.url))).toBe(3);
    receiver.requests.length = 0;
    receiver.failNext(200, 500);
    const refused = await exportPending(store, target(receiver.url));
    expect(refused.rollouts).toBe(2);
    expect(refused.failed).toMatch(/500/);
    const rest = await exportPending(store, target(receiver.url));
    expect(rest).toMatchObject({ rollouts: 1, requests: 1, failed: null });
    expect(store.otlpExports.acknowledged(targetKey(receiver.url))).toBe(3);
  }, 60_000);

  it('speaks OTLP/JSON too, with the same span ids, and takes the rollout filters', async () => {
    team = await teamCollect();
    receiver = await startOtlpReceiver();
    store = openStore(team.loaded);
    const mul = store.rollouts.list({ taskId: 'mul' })[0]!;
    const r = await exportPending(store, target(receiver.url, { protocol: 'json' }), { filter: { taskId: 'mul' } });
    expect(r).toMatchObject({ rollouts: 1, failed: null });
    expect(receiver.requests[0]!.contentType).toMatch(/^application\/json/);
    expect(receiver.spans.get(spanIdOf(mul.id, null))?.traceId).toBe(traceIdOf(mul.id));
    expect(receiver.spans.size).toBe(store.spans.list(mul.id).length + 1);
  }, 60_000);

  it('a dead collector fails the export in its deadline and leaves every rollout pending', async () => {
    team = await teamCollect();
    store = openStore(team.loaded);
    const dead = 'http://127.0.0.1:9/v1/traces';
    const r = await exportPending(store, target(dead, { timeout_ms: 1500 }));
    expect(r.rollouts).toBe(0);
    expect(r.failed).toMatch(/ECONNREFUSED|connect/i);
    expect(store.otlpExports.acknowledged(targetKey(dead))).toBe(0);
  }, 60_000);
});

describe('continuous OTLP export (telemetry.otlp.endpoint)', () => {
  let team: TeamCollect | undefined;
  let receiver: OtlpReceiver | undefined;
  afterEach(async () => {
    await receiver?.close();
    await team?.server.close();
  });

  it('a collect sends its rollouts as they finish, and what is left when it closes', async () => {
    receiver = await startOtlpReceiver();
    team = await teamCollect(
      `telemetry: { otlp: { endpoint: "${receiver.url}", interval_ms: 50, batch_rollouts: 1 } }\n`,
    );
    const store = openStore(team.loaded);
    try {
      const ids = store.rollouts.list({}).map((r) => r.id);
      const roots = new Set([...receiver.spans.values()].filter((s) => !s.parentSpanId).map((s) => s.traceId));
      expect(roots).toEqual(new Set(ids.map(traceIdOf)));
      expect(store.otlpExports.acknowledged(targetKey(receiver.url))).toBe(3);
    } finally {
      store.close();
    }
  }, 60_000);

  it('a dead collector fails nothing: the collect completes and its rollouts wait for the next export', async () => {
    const dead = 'http://127.0.0.1:9/v1/traces';
    team = await teamCollect(`telemetry: { otlp: { endpoint: "${dead}", interval_ms: 50, timeout_ms: 1000 } }\n`);
    expect(team.summary).toMatchObject({ completed: 3 });
    receiver = await startOtlpReceiver();
    const store = openStore(team.loaded);
    try {
      expect(store.otlpExports.acknowledged(targetKey(dead))).toBe(0);
      expect(store.otlpExports.pending(targetKey(dead), {}, 0, 10).traces).toHaveLength(3);
      const later = await exportPending(store, target(receiver.url));
      expect(later).toMatchObject({ rollouts: 3, failed: null });
    } finally {
      store.close();
    }
  }, 60_000);
});

describe('continuous OTLP export on its own thread (the built CLI)', () => {
  // the compiled worker: `npm run build` comes before this tier
  const workerUrl = pathToFileURL(path.join(ROOT, 'dist', 'telemetry', 'otlp-follow-worker.js'));
  let team: TeamCollect | undefined;
  let receiver: OtlpReceiver | undefined;
  let store: Store | undefined;
  afterEach(async () => {
    store?.close();
    await receiver?.close();
    await team?.server.close();
  });

  it.each(BACKENDS)(
    'a worker thread with its own %s connection sends and acknowledges every rollout, once',
    async (b) => {
      team = await teamCollect(b === 'postgres' ? `store: { url: "${freshPostgresUrl()}" }\n` : '');
      receiver = await startOtlpReceiver();
      store = openStore(team.loaded);
      const otlp = { ...target(receiver.url, { batch_rollouts: 1 }), interval_ms: 60_000 };
      const follower = new OtlpFollower(store, otlp, { storeOptions: storeOptions(team.loaded), workerUrl });
      expect(follower.thread).toBe('worker');
      await follower.tick();
      await follower.stop();
      expect(follower.totals).toMatchObject({ rollouts: 3, requests: 3, failures: 0 });
      const ids = store.rollouts.list({}).map((r) => r.id);
      const roots = [...receiver.spans.values()].filter((s) => !s.parentSpanId).map((s) => s.traceId);
      expect(roots.sort()).toEqual(ids.map(traceIdOf).sort());
      expect(store.otlpExports.acknowledged(targetKey(receiver.url))).toBe(3);
    },
    60_000,
  );

  it('a thread that cannot open the store, or a dead collector, fails the passes and nothing else', async () => {
    team = await teamCollect();
    store = openStore(team.loaded);
    const warnings: string[] = [];
    const dead = { ...target('http://127.0.0.1:9/v1/traces', { timeout_ms: 1000 }), interval_ms: 60_000 };
    const missing = { path: path.join(team.dir, 'nowhere', 'store.sqlite') };
    const lost = new OtlpFollower(store, dead, { storeOptions: missing, workerUrl, onWarn: (m) => warnings.push(m) });
    await lost.tick();
    await lost.stop();
    expect(lost.totals).toMatchObject({ rollouts: 0, failures: 1 });
    expect(warnings.join('\n')).toMatch(/export thread failed/);

    const refused = new OtlpFollower(store, dead, { storeOptions: storeOptions(team.loaded), workerUrl });
    await refused.tick();
    await refused.stop();
    expect(refused.totals).toMatchObject({ rollouts: 0, failures: 1 });
    expect(store.otlpExports.pending(targetKey(dead.endpoint), {}, 0, 10).traces).toHaveLength(3);
  }, 60_000);

  it("runs the passes on the caller's thread when there is no compiled worker", async () => {
    team = await teamCollect();
    store = openStore(team.loaded);
    const otlp = { ...target('http://127.0.0.1:9/v1/traces'), interval_ms: 60_000 };
    const workerUrlMissing = pathToFileURL(path.join(team.dir, 'otlp-follow-worker.js'));
    const opts = { storeOptions: storeOptions(team.loaded), workerUrl: workerUrlMissing };
    expect(new OtlpFollower(store, otlp, opts).thread).toBe('main');
    expect(new OtlpFollower(store, otlp, { workerUrl }).thread).toBe('main');
  });
});

describe('continuous OTLP export from the gateway', () => {
  it("a session's rollout goes out once it ends, its call a chat span", async () => {
    const receiver = await startOtlpReceiver();
    const backend = await startScriptedServer(() => ({ content: 'Paris' }));
    const yaml = `models:\n  stub: { base_url: "${backend.baseUrl}", model: m }
agents:\n  - { id: a, model: stub, tool_mode: text }
telemetry: { otlp: { endpoint: "${receiver.url}", interval_ms: 50 } }
`;
    const loaded = loadConfig({ cwd: tempDir({ 'massgen-rl.yaml': yaml }) });
    const rt = new Runtime(loaded);
    try {
      const gw = await gateway(rt, { port: 0, flushMs: 10 });
      const r = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': 'trip' },
        body: JSON.stringify({ model: 'stub', messages: [{ role: 'user', content: 'Capital of France?' }] }),
      });
      expect(r.status).toBe(200);
      await gw.stop();
      const id = rt.store().rollouts.list({ source: GATEWAY_SOURCE })[0]!.id;
      await rt.close();
      const spans = [...receiver.spans.values()].filter((s) => s.traceId === traceIdOf(id));
      expect(spans.map((s) => s.name).sort()).toEqual(['chat stub', `gateway ${id}`].sort());
      expect(spans.find((s) => s.name === 'chat stub')!.attributes).toMatchObject({ 'output.value': 'Paris' });
    } finally {
      await rt.close();
      await receiver.close();
      await backend.close();
    }
  }, 60_000);
});
