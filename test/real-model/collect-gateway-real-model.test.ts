import { OpenAI } from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { buildDataset, type DpoRow, type SftRow } from '../../src/datasets/index.js';
import { datasetOptionsFromConfig } from '../../src/datasets/options.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { gateway, type Gateway } from '../../src/pipeline/serve/gateway.js';
import { train } from '../../src/pipeline/train/train.js';
import { addFeedback } from '../../src/pipeline/utilities/rewards.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { readRows } from '../fixtures/datasets/team-rollouts.js';
import { tempDir } from '../helpers.js';

// The loop on captured traffic with real parts: the official openai npm SDK through the in-process gateway
// to the bundled model, feedback on the sessions, collect.source gateway, and the training datasets.

const KEY = 'gw-collect-key-0123456789abcdef';
const yaml = `models:
  smol:
    model: smollm2-135m-instruct
    local: { weights: "builtin:smollm2-135m-instruct", engine: llama.cpp, max_batch_size: 2 }
agents:
  - { id: a, model: smol }
gateway: { api_keys_env: [GW_COLLECT_KEY], holdout: 0 }
collect: { source: gateway }
rewards:
  weights: { human: 1 }
train:
  batch_size: 1
  max_length: 128
  save_steps: 0
  gates: { min_examples: 1, min_clean_share: 0, min_categories: 1 }
`;
const env = { ...process.env, GW_COLLECT_KEY: KEY };
const loaded = loadConfig({ cwd: tempDir({ 'massgen-rl.yaml': yaml }), env });
const rt = new Runtime(loaded);
// the same project without references: agreement is the reward
const labelFreeYaml = yaml
  .replace('rewards:\n  weights: { human: 1 }', 'rewards: { references: off }')
  .replace('train:\n', 'train:\n  dpo: { pairs: correctness }\n');
const labelFree = loadConfig({ cwd: tempDir({ 'massgen-rl.yaml': labelFreeYaml }), env });
const lfRt = new Runtime(labelFree);
let gw: Gateway | undefined;

afterAll(async () => {
  await gw?.stop();
  await rt.close();
  await lfRt.close();
});

describe('collect.source gateway on real captured traffic', () => {
  it('sessions with feedback become SFT and DPO rows and train a step; the one without waits', async () => {
    gw = await gateway(rt, { port: 0, flushMs: 20 });
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0, timeout: 180_000 });
    const ask = (session: string, maxTokens: number, content = 'Name a color.') =>
      client.chat.completions.create(
        { model: 'smol', messages: [{ role: 'user', content }], temperature: 0, seed: 7, max_tokens: maxTokens },
        { headers: { 'X-Session-Id': session } },
      );
    // One prompt, two lengths: two different replies to pair; a third session gets no feedback.
    const long = (await ask('long', 24)).choices[0]!.message.content!;
    const short = (await ask('short', 3)).choices[0]!.message.content!;
    await ask('silent', 8, 'Say hello.');
    expect(long).not.toBe(short);
    const fb = await fetch(`${gw.url}/v1/feedback`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ session_id: 'long', score: 1, note: 'complete' }),
    });
    expect(fb.status).toBe(202);
    await gw.stop();
    gw = undefined;
    const shortId = rt
      .store()
      .rollouts.list()
      .find((r) => r.metadata.session === 'short')!.id;
    await addFeedback(rt, shortId, { score: 0.2 });

    const s = await collect(rt);
    expect(s.captured).toMatchObject({ taken: 2, rewarded: 2, waiting: 1, heldOut: 0, scored: 0 });

    const store = openStore(loaded);
    try {
      const options = datasetOptionsFromConfig(loaded.config.train, loaded.config.rewards);
      const dataDir = loaded.paths.dataDir;
      const sft = readRows<SftRow>((await buildDataset(store, { algo: 'sft', dataDir, options })).dir);
      // the long reply (1.0) clears train.sft.reward_threshold, the short one (0.2) does not
      expect(sft.map((r) => r.messages)).toEqual([
        [
          { role: 'user', content: 'Name a color.' },
          { role: 'assistant', content: long },
        ],
      ]);
      const dpo = readRows<DpoRow>((await buildDataset(store, { algo: 'dpo', dataDir, options })).dir);
      expect(dpo).toHaveLength(1);
      expect(dpo[0]).toMatchObject({
        chosen: [{ role: 'assistant', content: long }],
        rejected: [{ role: 'assistant', content: short }],
      });
      expect(dpo[0]!.margin).toBeCloseTo(0.8);
    } finally {
      store.close();
    }
    // train weights takes the cycle's data as the loop's train stage does: one SFT step on the one row
    const t = await train(rt, { algo: 'sft', maxSteps: 1 });
    expect(t).toMatchObject({ steps: 1, dataset: { rows: 1 } });
  }, 600_000);

  it('label-free: the replies of one session to one prompt agree or not, and the agreeing ones are trained toward', async () => {
    expect(labelFree.config.rewards.weights).toEqual({ agreement: 1, coordination: 0.2 });
    gw = await gateway(lfRt, { port: 0, flushMs: 20 });
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0, timeout: 180_000 });
    const ask = async (session: string, maxTokens: number, content = 'What is 2 + 3?') =>
      (
        await client.chat.completions.create(
          { model: 'smol', messages: [{ role: 'user', content }], temperature: 0, max_tokens: maxTokens },
          { headers: { 'X-Session-Id': session } },
        )
      ).choices[0]!.message.content!;
    // a self-consistency agent asks three times in full and once cut short: greedy replies, so the three agree
    const replies = [await ask('sc', 48), await ask('sc', 2), await ask('sc', 48), await ask('sc', 48)];
    await ask('lone', 16, 'Say hello.');
    await gw.stop();
    gw = undefined;
    expect(new Set([replies[0], replies[2], replies[3]]).size).toBe(1);
    expect(replies[1]).not.toBe(replies[0]);

    const s = await collect(lfRt);
    expect(s.captured).toMatchObject({ taken: 1, scored: 1, noMajority: 1, waiting: 0 });
    const store = openStore(labelFree);
    try {
      const sc = store.rollouts.list().find((r) => r.metadata.session === 'sc')!;
      expect(sc.totalReward).toBe(1);
      const turns = store.rewards.list(sc.id).filter((w) => w.channel === 'turn');
      expect(turns.map((w) => [w.family, w.value])).toEqual([
        ['agreement', 1],
        ['agreement', 0],
        ['agreement', 1],
        ['agreement', 1],
      ]);
      const options = datasetOptionsFromConfig(labelFree.config.train, labelFree.config.rewards);
      const dpo = readRows<DpoRow>(
        (await buildDataset(store, { algo: 'dpo', dataDir: labelFree.paths.dataDir, options })).dir,
      );
      expect(dpo.map((p) => [p.chosen[0]!.content, p.rejected[0]!.content, p.meta.kind])).toEqual([
        [replies[0], replies[1], 'correctness'],
      ]);
    } finally {
      store.close();
    }
  }, 600_000);
});
