import { execa } from 'execa';
import path from 'node:path';
import { expect, it } from 'vitest';
import { deploy } from '../../src/pipeline/deploy/deploy.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { gateway } from '../../src/pipeline/serve/gateway.js';
import { pythonEnv } from '../../src/python/module.js';
import { venvPython } from '../../src/python/venv.js';
import { registerCheckpoint } from '../../src/resources/checkpoints.js';
import { Runtime, withRuntime } from '../../src/runtime/runtime.js';
import { liveServers } from '../../src/serving/registry.js';
import { GATEWAY_SOURCE } from '../../src/store/rollouts.js';
import { FIXTURES, configIn, tempDir } from '../helpers.js';

// Real parts: the bundled model behind the gateway's own local server and a real PEFT LoRA adapter as the
// canary. The canary's sessions are answered by the adapter, loaded beside production's weights in the same
// server; the rest by production; when the canary ends its sessions go back and the adapter is unloaded.
const MAKE_ADAPTER = path.join(FIXTURES, 'trainers', 'make_lora_adapter.py');
const LINE = 'smollm2-135m-instruct';
const CONFIG = `models:
  local: { model: ${LINE}, local: { weights: "builtin:${LINE}", max_batch_size: 4 } }
agents: [{ id: a1, model: local }]
`;
const SESSIONS = Array.from({ length: 12 }, (_, i) => `s-${i}`);

it('a canary in the gateway serves its sessions from its adapter on the same local server, then unloads it', async () => {
  const loaded = configIn(CONFIG);
  const adapterDir = path.join(tempDir(), 'lora');
  await execa(venvPython(loaded.paths.venvDir), [MAKE_ADAPTER, loaded.paths.defaultModelDir, adapterDir], {
    env: pythonEnv(),
  });
  const registered = await withRuntime(loaded, (rt) => {
    const base = rt.store().resources.get(syncProduction(rt).members.agents.a1!.weights!)!;
    return registerCheckpoint(rt.store(), {
      path: adapterDir,
      algo: 'sft',
      adapter: true,
      baseModel: `builtin:${LINE}`,
      baseResourceId: base.id,
      basePath: loaded.paths.defaultModelDir,
    });
  });
  const started = await withRuntime(loaded, (rt) =>
    deploy(rt, { candidate: registered.checkpoint.id, canary: 0.5, force: true }),
  );
  expect(started.action).toBe('canary started');

  const rt = new Runtime(loaded);
  const gw = await gateway(rt, { port: 0, flushMs: 20, armsRefreshMs: 100 });
  const ask = async (session: string) => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': session },
      body: JSON.stringify({
        model: 'local',
        messages: [{ role: 'user', content: 'What is 2 + 3?' }],
        max_tokens: 12,
        temperature: 0,
        return_token_ids: true,
      }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    return ((await res.json()) as { choices: { token_ids: number[] }[] }).choices[0]!.token_ids.join(',');
  };
  try {
    const answers = new Map<string, string>();
    for (const s of SESSIONS) answers.set(s, await ask(s));
    await gw.flush();
    const store = rt.store();
    const setOf = new Map(
      store.rollouts
        .list({ source: GATEWAY_SOURCE })
        .map((r) => [r.metadata.session as string, r.resourceSetId] as const),
    );
    const canaryId = started.candidate.id;
    const inCanary = SESSIONS.filter((s) => setOf.get(s) === canaryId);
    const inProduction = SESSIONS.filter((s) => setOf.get(s) === started.before.id);
    expect(inCanary.length + inProduction.length).toBe(SESSIONS.length);
    expect(inCanary.length).toBeGreaterThan(0);
    expect(inProduction.length).toBeGreaterThan(0);
    // greedy decoding: each arm answers alike, and the adapter differently from production's weights
    const canaryAnswers = new Set(inCanary.map((s) => answers.get(s)));
    const productionAnswers = new Set(inProduction.map((s) => answers.get(s)));
    expect(canaryAnswers.size).toBe(1);
    expect(productionAnswers.size).toBe(1);
    expect([...canaryAnswers][0]).not.toBe([...productionAnswers][0]);
    const server = liveServers(loaded.paths.dataDir).find((e) => e.model === 'local')!;
    const models = async () =>
      ((await (await fetch(`${server.base_url}/models`)).json()) as { data: { id: string }[] }).data.map((m) => m.id);
    expect(await models()).toEqual([LINE, `${LINE}-v2`]);

    // the canary ends: its sessions are production's again and its adapter leaves the server
    store.sets.setPointer('canary', null);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(await ask(inCanary[0]!)).toBe([...productionAnswers][0]);
    for (let i = 0; (await models()).length > 1; i++) {
      expect(i).toBeLessThan(100);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await models()).toEqual([LINE]);
  } finally {
    await gw.stop();
    await rt.close();
  }
});
