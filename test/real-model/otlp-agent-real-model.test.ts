import { execa } from 'execa';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { evaluate } from '../../src/pipeline/evaluate/evaluate.js';
import { gateway, type Gateway } from '../../src/pipeline/serve/gateway.js';
import { train } from '../../src/pipeline/train/train.js';
import { addFeedback } from '../../src/pipeline/utilities/rewards.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { OTLP_SOURCE } from '../../src/store/rollouts.js';
import { heldOutRollout } from '../../src/trace/held-out.js';
import { FIXTURES, tempDir } from '../helpers.js';
import { describeWithTelemetry, telemetryPython } from '../support/telemetry.js';

// An agent instrumented as users instrument one (the official openai Python SDK, OpenInference's instrumentation,
// the OpenTelemetry SDK's OTLP/HTTP exporter) calls the bundled model's server directly, not through the gateway,
// and sends its spans to the gateway's /v1/traces. Its sessions are captured traffic: feedback, collect, one SFT
// step, and the candidate replayed against production on the held-out session's call, judged by the same model.

const KEY = 'otlp-agent-key-0123456789abcdef';
const LINE = 'smollm2-135m-instruct';
const HOLDOUT = 0.5;
const yaml = `models:
  smol: { model: ${LINE}, local: { weights: "builtin:${LINE}", engine: llama.cpp, max_batch_size: 2 } }
agents:
  - { id: a, model: smol, max_tokens: 16 }
gateway: { api_keys_env: [OTLP_AGENT_KEY], holdout: ${HOLDOUT} }
collect: { source: gateway }
eval: { source: gateway, report: false, replay: { judge_model: smol, max_prompts: 1 } }
rewards: { weights: { human: 1 }, judge: { max_retries: 0 } }
deploy: { gates: { min_pairs: 1 } }
train:
  batch_size: 1
  max_length: 128
  save_steps: 0
  gates: { min_examples: 1, min_clean_share: 0, min_categories: 1 }
`;
const QUESTIONS = ['Name a color.', 'Say hello.', 'What is 2 + 3?', 'Name a fruit.', 'Name an animal.', 'Say yes.'];
const loaded = loadConfig({ cwd: tempDir({ 'massgen-rl.yaml': yaml }), env: { ...process.env, OTLP_AGENT_KEY: KEY } });
const rt = new Runtime(loaded);
let gw: Gateway | undefined;

afterAll(async () => {
  await gw?.stop();
  await rt.close();
});

describeWithTelemetry('an OpenTelemetry-instrumented openai SDK agent becomes training data', () => {
  it('its spans become sessions that train a step and evaluate like captured traffic', async () => {
    gw = await gateway(rt, { port: 0, flushMs: 20 });
    const served = await rt.servers.server('smol', undefined, true);
    const agent = await execa(
      telemetryPython(),
      [
        path.join(FIXTURES, 'otlp', 'openai_agent.py'),
        served.baseUrl,
        served.model,
        `${gw.url}/v1/traces`,
        KEY,
        ...QUESTIONS,
      ],
      { env: { OTEL_SDK_DISABLED: 'false' }, timeout: 400_000 },
    );
    const answers = agent.stdout.split('\n').map((l) => JSON.parse(l) as { session: string; answer: string });
    expect(answers).toHaveLength(QUESTIONS.length);
    await gw.stop();
    gw = undefined;

    const store = rt.store();
    const sessions = store.rollouts.list({ source: OTLP_SOURCE });
    expect(sessions).toHaveLength(QUESTIONS.length);
    for (const s of sessions) {
      const calls = store.spans.list(s.id).filter((x) => x.type === 'prompt');
      expect(calls).toHaveLength(1);
      const p = calls[0]!.payload as { request: { messages: { content: string }[] }; usage: { prompt_tokens: number } };
      expect(QUESTIONS).toContain(p.request.messages.at(-1)!.content);
      expect(p.usage.prompt_tokens).toBeGreaterThan(0);
      expect(calls[0]!.agent).toBe('sdk-agent');
      expect(answers.map((a) => a.answer)).toContain(s.finalAnswer);
    }
    const taken = sessions.filter((s) => !heldOutRollout(s.id, HOLDOUT));
    const held = sessions.filter((s) => heldOutRollout(s.id, HOLDOUT));
    expect(taken.length).toBeGreaterThan(0);
    expect(held.length).toBeGreaterThan(0);
    await addFeedback(rt, taken[0]!.id, { score: 1 });

    const c = await collect(rt);
    expect(c.captured).toMatchObject({ taken: 1, rewarded: 1, heldOut: held.length });
    const t = await train(rt, { algo: 'sft', maxSteps: 1 });
    expect(t).toMatchObject({ steps: 1, dataset: { rows: 1 } });
    const ev = await evaluate(rt, { candidate: `set:${t.candidateSet!.version}` });
    expect(ev.replay).toBeDefined();
    expect(ev.comparison.pairs).toBe(1);
  }, 600_000);
});
