import { execa } from 'execa';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { OpenAI } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { gateway, type Gateway } from '../../src/pipeline/serve/gateway.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import type { PromptPayload } from '../../src/trace/payloads.js';
import { FIXTURES, tempDir } from '../helpers.js';
import { describeWithMassgen } from '../support/massgen-describe.js';
import { massgenEnv, massgenVenv } from '../support/massgen.js';

// The official openai npm SDK through the gateway to the bundled model (a llama.cpp server the gateway
// starts on the first request, as collect does). Greedy decoding: the streamed reply is the plain one.

const KEY = 'gw-e2e-key-0123456789abcdef';
const REQUEST = {
  model: 'smol',
  messages: [{ role: 'user' as const, content: 'What is 2 + 3?' }],
  temperature: 0,
  seed: 7,
  max_tokens: 16,
};

let loaded: LoadedConfig;
let rt: Runtime;
let gw: Gateway;
let client: OpenAI;

beforeAll(async () => {
  const yaml = `models:
  smol:
    model: smollm2-135m-instruct
    local: { weights: "builtin:smollm2-135m-instruct", engine: llama.cpp, max_batch_size: 2 }
agents:
  - { id: a, model: smol }
gateway: { api_keys_env: [GW_E2E_KEY] }
`;
  loaded = loadConfig({ cwd: tempDir({ 'massgen-rl.yaml': yaml }), env: { ...process.env, GW_E2E_KEY: KEY } });
  rt = new Runtime(loaded);
  gw = await gateway(rt, { port: 0, flushMs: 20 });
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0, timeout: 180_000 });
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await rt?.close();
});

describe('the official openai npm SDK through the gateway to the bundled model', () => {
  it('answers plain and streamed alike without unasked logprobs; spans hold token ids, logprobs; embeds', async () => {
    const plain = await client.chat.completions.create(REQUEST, { headers: { 'X-Session-Id': 'e2e' } });
    expect(plain.object).toBe('chat.completion');
    const content = plain.choices[0]!.message.content;
    expect(content).toBeTruthy();
    expect(plain.choices[0]!.logprobs ?? null).toBeNull();
    expect(plain.choices[0]).not.toHaveProperty('token_ids');

    const session = { headers: { 'X-Session-Id': 'e2e' } };
    const stream = await client.chat.completions.create({ ...REQUEST, stream: true }, session);
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(content);
    expect(chunks.every((c) => !c.usage && c.choices.every((x) => !x.logprobs))).toBe(true);

    const models = [];
    for await (const m of client.models.list()) models.push(m.id);
    expect(models).toEqual(['smol']);

    // the SDK asks for base64 and decodes it: unit vectors of the model's hidden size
    const embedded = await client.embeddings.create({ model: 'smol', input: ['red', 'blue'] }, session);
    expect(embedded.data.map((d) => d.embedding.length)).toEqual([576, 576]);
    expect(Math.hypot(...embedded.data[0]!.embedding)).toBeCloseTo(1, 4);
    const fb = await fetch(`${gw.url}/v1/feedback`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ session_id: 'e2e', score: 1, note: 'right' }),
    });
    expect(fb.status).toBe(202);

    await gw.stop();
    const store = openStore(loaded);
    try {
      const [rollout] = store.rollouts.list().filter((r) => r.source === 'gateway');
      expect(rollout!.metadata.session).toBe('e2e');
      const all = store.spans.list(rollout!.id);
      expect(all.map((s) => [s.type, s.name])).toEqual([
        ['prompt', 'chat'],
        ['prompt', 'chat'],
        ['message', 'embeddings'],
        ['reward', 'human'],
      ]);
      expect(all[2]!.payload).toMatchObject({ response: { count: 2, dimensions: 576 }, request: { input_count: 2 } });
      const rewards = store.rewards.list(rollout!.id).map((r) => [r.family, r.value, r.reason]);
      expect(rewards).toEqual([['human', 1, 'right']]);
      const spans = all.filter((s) => s.type === 'prompt').map((s) => s.payload as PromptPayload);
      expect(spans).toHaveLength(2);
      for (const p of spans) {
        expect(p.response!.content).toBe(content);
        expect(p.token_ids!.length).toBe(p.usage.completion_tokens);
        expect(p.logprobs!.length).toBe(p.token_ids!.length);
        expect(p.logprobs!.every((l) => l.logprob <= 0)).toBe(true);
        expect(p.gateway!.backend).toBe('smol');
      }
      expect(spans[0]!.token_ids).toEqual(spans[1]!.token_ids);
      expect(spans[1]!.ttft_ms).toBeGreaterThan(0);
    } finally {
      store.close();
    }
  }, 300_000);
});

describeWithMassgen('the official openai Python SDK (the MassGen venv) through the gateway', () => {
  it('plain and streamed alike, tool calls valid, a bad request a BadRequestError naming its param', async () => {
    const second = await gateway(rt, { port: 0, flushMs: 20 });
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-openai-py-'));
    try {
      const r = await execa(
        path.join(massgenVenv(), 'bin', 'python'),
        [path.join(FIXTURES, 'openai-sdk', 'check_sdk.py'), `${second.url}/v1`, 'smol'],
        {
          env: massgenEnv(home, path.join(home, 'egress.log'), { OPENAI_API_KEY: KEY }),
          extendEnv: false,
          reject: false,
          stdin: 'ignore',
          timeout: 600_000,
        },
      );
      expect(r.exitCode, String(r.stderr).slice(-4000)).toBe(0);
      const out = JSON.parse(String(r.stdout).trim().split('\n').at(-1)!);
      expect(out.plain).toMatchObject({ object: 'chat.completion', finish_reason: 'stop' });
      expect(out.stream).toMatchObject({ objects: ['chat.completion.chunk'], content: out.plain.content });
      for (const reply of [out.required, out.named, out.tool_stream]) {
        expect(reply).toMatchObject({ finish_reason: 'tool_calls', call: { count: 1, type: 'function' } });
        expect(() => JSON.parse(reply.call.arguments)).not.toThrow();
      }
      expect(out.parse.parsed).toEqual(JSON.parse(out.parse.content));
      expect(out.bad_request).toMatchObject({ status: 400, param: 'tool_choice' });
    } finally {
      await second.stop();
      fs.rmSync(home, { recursive: true, force: true });
    }
  }, 900_000);
});
