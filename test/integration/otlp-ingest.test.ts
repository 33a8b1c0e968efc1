import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { buildDataset, type SftRow } from '../../src/datasets/index.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { gateway, type Gateway } from '../../src/pipeline/serve/gateway.js';
import { importOtlp } from '../../src/pipeline/utilities/import-otlp.js';
import { addFeedback } from '../../src/pipeline/utilities/rewards.js';
import { Runtime, withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { OTLP_SOURCE } from '../../src/store/rollouts.js';
import { exportPending } from '../../src/telemetry/otlp-export.js';
import { spanIdOf } from '../../src/telemetry/span-map.js';
import { readRows } from '../fixtures/datasets/team-rollouts.js';
import { tempDir } from '../helpers.js';
import { startScriptedServer, type ScriptedServer } from '../support/scripted-server.js';
import { teamCollect, type TeamCollect } from '../support/team-collect.js';

const hex = (n: number, chars: number) => n.toString(16).padStart(chars, '0');
const ns = (ms: number) => String(BigInt(ms) * 1_000_000n);
const kv = (key: string, value: string | number) => ({
  key,
  value: typeof value === 'number' ? { intValue: String(value) } : { stringValue: value },
});

/** An OTLP/JSON request: one agent's session of an OpenInference-instrumented chat call under a CHAIN span. */
function agentRequest(question: string, answer: string, opts: { trace?: number; session?: string } = {}) {
  const traceId = hex(opts.trace ?? 1, 32);
  const t = Date.now() - 3_600_000;
  const span = (id: number, parent: number | null, name: string, attrs: ReturnType<typeof kv>[], at = 0) => ({
    traceId,
    spanId: hex(id, 16),
    ...(parent ? { parentSpanId: hex(parent, 16) } : {}),
    name,
    kind: 1,
    startTimeUnixNano: ns(t + at),
    endTimeUnixNano: ns(t + at + 50),
    attributes: attrs,
    status: {},
  });
  const session = opts.session ? [kv('session.id', opts.session)] : [];
  return {
    resourceSpans: [
      {
        resource: { attributes: [kv('service.name', 'helpdesk-bot')] },
        scopeSpans: [
          {
            scope: { name: 'openinference.instrumentation.openai' },
            spans: [
              span(
                (opts.trace ?? 1) * 10 + 2,
                (opts.trace ?? 1) * 10 + 1,
                'ChatCompletion',
                [
                  kv('openinference.span.kind', 'LLM'),
                  kv('llm.model_name', 'gpt-4o-mini'),
                  kv('llm.input_messages.0.message.role', 'system'),
                  kv('llm.input_messages.0.message.content', 'Be brief.'),
                  kv('llm.input_messages.1.message.role', 'user'),
                  kv('llm.input_messages.1.message.content', question),
                  kv('llm.output_messages.0.message.role', 'assistant'),
                  kv('llm.output_messages.0.message.content', answer),
                  kv('llm.token_count.prompt', 12),
                  kv('llm.token_count.completion', 3),
                  kv('llm.invocation_parameters', '{"temperature": 0.2}'),
                  ...session,
                ],
                5,
              ),
              span((opts.trace ?? 1) * 10 + 1, null, 'agent run', [
                kv('openinference.span.kind', 'CHAIN'),
                kv('x.custom', 7),
                ...session,
              ]),
            ],
          },
        ],
      },
    ],
  };
}

async function post(url: string, body: Buffer | string, headers: Record<string, string>) {
  const r = await fetch(`${url}/v1/traces`, { method: 'POST', body, headers });
  return { status: r.status, text: await r.text() };
}

describe('OTLP spans in: POST /v1/traces on the gateway and traces import --otlp', () => {
  let backend: ScriptedServer | undefined;
  let rt: Runtime | undefined;
  let gw: Gateway | undefined;
  let team: TeamCollect | undefined;
  afterEach(async () => {
    await gw?.stop();
    await rt?.close();
    await backend?.close();
    await team?.server.close();
    gw = rt = backend = team = undefined;
  });

  async function receiver(extra = ''): Promise<LoadedConfig> {
    backend = await startScriptedServer(() => ({ content: 'ok' }));
    const yaml = `models:\n  stub: { base_url: "${backend.baseUrl}", model: m }
agents:\n  - { id: a, model: stub, tool_mode: text }
rewards:\n  weights: { human: 1 }
collect: { source: gateway }
gateway: { holdout: 0${extra} }
`;
    const loaded = loadConfig({ cwd: tempDir({ 'massgen-rl.yaml': yaml }) });
    rt = new Runtime(loaded);
    syncProduction(rt);
    gw = await gateway(rt, { port: 0, flushMs: 10 });
    return loaded;
  }

  it("our own export read back: each rollout a session with its model calls' messages, replies and usage", async () => {
    team = await teamCollect();
    await receiver();
    const source = openStore(team.loaded);
    try {
      const target = {
        endpoint: `${gw!.url}/v1/traces`,
        protocol: 'protobuf' as const,
        headers: {},
        project: 'p',
        batch_rollouts: 2,
        timeout_ms: 5000,
      };
      expect(await exportPending(source, target)).toMatchObject({ rollouts: 3, failed: null });
      const store = rt!.store();
      const received = store.rollouts.list({ source: OTLP_SOURCE });
      expect(received).toHaveLength(3);
      const sent = source.rollouts.list({});
      const calls = (id: string, s = store) => s.spans.list(id).filter((x) => x.type === 'prompt');
      for (const original of sent) {
        const copy = received.find(
          (r) => r.metadata.otlp && (r.metadata.otlp as { session: string }).session === `session:${original.id}`,
        )!;
        expect(copy).toBeDefined();
        const theirs = calls(original.id, source);
        const ours = calls(copy.id);
        expect(ours).toHaveLength(theirs.length);
        for (const t of theirs) {
          // each received call names the span it was sent as: the original's rollout and seq
          const mine = ours.find(
            (o) => (o.payload as { otlp: { span_id: string } }).otlp.span_id === spanIdOf(original.id, t.seq),
          )!;
          const a = t.payload as {
            request: { messages: { role: string; content: string }[] };
            response: { content: string } | null;
            usage: object;
          };
          const b = mine.payload as typeof a;
          expect(b.request.messages.map((m) => [m.role, m.content])).toEqual(
            a.request.messages.map((m) => [m.role, m.content]),
          );
          // a call cancelled before its reply (the scripted team cancels two) has none on either side
          expect(b.response?.content ?? null).toBe(a.response?.content ?? null);
          expect(b.usage).toMatchObject(a.usage);
          expect(mine.agent).toBe(t.agent);
        }
        // Coordination events and rewards are kept as message spans with their attributes, the rollout span too.
        expect(store.spans.list(copy.id)).toHaveLength(source.spans.list(original.id).length + 1);
      }
      // Sent again: stored already, nothing added.
      source.otlpExports.forget(target.endpoint);
      const before = received.map((r) => store.spans.list(r.id).length);
      await exportPending(source, target);
      expect(received.map((r) => store.spans.list(r.id).length)).toEqual(before);
    } finally {
      source.close();
    }
  }, 60_000);

  it('refuses bad requests with the reason and stores nothing; takes gzip', async () => {
    await receiver(', max_body_bytes: 4096');
    const store = rt!.store();
    const count = () => store.rollouts.count({});
    const protobuf = { 'content-type': 'application/x-protobuf' };
    const json = { 'content-type': 'application/json' };

    let r = await post(gw!.url, Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01]), protobuf);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text).error).toMatchObject({
      code: 'invalid_otlp',
      message: expect.stringMatching(/protobuf/),
    });

    const looped = agentRequest('q', 'a');
    const spans = looped.resourceSpans[0]!.scopeSpans[0]!.spans;
    spans[1]!.parentSpanId = spans[0]!.spanId as string; // the CHAIN span under the LLM span under the CHAIN span
    r = await post(gw!.url, JSON.stringify(looped), json);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text).error.message).toMatch(/parents loop/);

    const badId = agentRequest('q', 'a');
    badId.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.spanId = 'xyz';
    r = await post(gw!.url, JSON.stringify(badId), json);
    expect(JSON.parse(r.text).error.message).toMatch(/resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]\.spanId/);

    expect((await post(gw!.url, 'hello', { 'content-type': 'text/plain' })).status).toBe(415);
    expect((await post(gw!.url, 'x'.repeat(5000), json)).status).toBe(413);
    const bomb = zlib.gzipSync(Buffer.from(`{"resourceSpans": [], "pad": "${'x'.repeat(100_000)}"}`));
    expect((await post(gw!.url, bomb, { ...json, 'content-encoding': 'gzip' })).status).toBe(413);
    expect(count()).toBe(0);

    r = await post(gw!.url, zlib.gzipSync(JSON.stringify(agentRequest('Capital of France?', 'Paris'))), {
      ...json,
      'content-encoding': 'gzip',
    });
    expect(r).toEqual({ status: 200, text: '{}' });
    expect(store.rollouts.list({ source: OTLP_SOURCE })).toHaveLength(1);
  }, 60_000);

  it('exported files become captured sessions that collect takes, with feedback, into an SFT dataset', async () => {
    const loaded = await receiver();
    await gw!.stop();
    await rt!.close();
    gw = rt = undefined;
    const dir = tempDir({
      'a.json': JSON.stringify(agentRequest('Capital of France?', 'Paris', { trace: 1, session: 's-1' })),
      'b.jsonl': `${JSON.stringify(agentRequest('Largest planet?', 'Jupiter', { trace: 2 }))}\n`,
      'notes.txt': 'not an export',
    });
    const r = await withRuntime(loaded, (x) => importOtlp(x, dir));
    expect(r).toMatchObject({
      files: 2,
      received: 4,
      created: 2,
      spans: { llm: 2, tool: 0, message: 2 },
      duplicates: 0,
    });
    const again = await withRuntime(loaded, (x) => importOtlp(x, path.join(dir, 'a.json')));
    expect(again).toMatchObject({ created: 0, duplicates: 2 });

    const store = openStore(loaded);
    const sessions = store.rollouts.list({ source: OTLP_SOURCE });
    const paris = sessions.find((s) => s.finalAnswer === 'Paris')!;
    expect(paris).toMatchObject({ status: 'completed', tokens: 15, messages: 1 });
    const call = store.spans.list(paris.id).find((s) => s.type === 'prompt')!;
    expect(call).toMatchObject({ name: 'chat', agent: 'helpdesk-bot' });
    expect(call.payload).toMatchObject({ request: { model: 'gpt-4o-mini', temperature: 0.2 } });
    const other = store.spans.list(paris.id).find((s) => s.type === 'message')!;
    expect(other.payload).toMatchObject({ otlp: { name: 'agent run', attributes: { 'x.custom': 7 } } });
    store.close();

    await withRuntime(loaded, (x) => addFeedback(x, paris.id, { score: 1 }));
    const taken = await withRuntime(loaded, (x) => collect(x));
    expect(taken.captured).toMatchObject({ taken: 1, waiting: 1 });
    const s2 = openStore(loaded);
    try {
      const sft = await buildDataset(s2, {
        algo: 'sft',
        dataDir: loaded.paths.dataDir,
        options: { weights: { human: 1 } },
      });
      const rows = readRows<SftRow>(sft.dir);
      expect(rows.map((x) => x.messages.map((m) => m.content))).toEqual([['Be brief.', 'Capital of France?', 'Paris']]);
    } finally {
      s2.close();
    }
    expect(fs.existsSync(dir)).toBe(true);
  }, 60_000);
});
