import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { deploy, rollback } from '../../src/pipeline/deploy/deploy.js';
import { syncProduction } from '../../src/pipeline/production-sync.js';
import { serve } from '../../src/pipeline/serve/serve.js';
import { pythonEnv } from '../../src/python/module.js';
import { venvPython } from '../../src/python/venv.js';
import { registerCheckpoint } from '../../src/resources/checkpoints.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { startLocalServer } from '../../src/serving/local-server.js';
import { liveServers, registerServer, type ServerEntry } from '../../src/serving/registry.js';
import { HOST } from '../../src/store/process-owner.js';
import { FIXTURES, configIn, pidAlive, tempDir } from '../helpers.js';

// Real parts: the trainer venv, the default model (`massgen-rl doctor --fix`) and a real PEFT LoRA adapter.
const MAKE_ADAPTER = path.join(FIXTURES, 'trainers', 'make_lora_adapter.py');
const LINE = 'smollm2-135m-instruct';
const CONFIG = `models:
  local: { model: ${LINE}, local: { weights: "builtin:${LINE}", max_batch_size: 2 } }
agents: [{ id: a1, model: local }]
`;
const QUESTION = [{ role: 'user', content: 'What is 2 + 3?' }];
const LONG = { messages: [{ role: 'user', content: 'Tell me about the sea.' }], max_tokens: 64, ignore_eos: true };

interface Chat {
  status: number;
  model?: string;
  ids?: number[];
}

async function chat(
  baseUrl: string,
  model: string,
  body: object = { messages: QUESTION, max_tokens: 12 },
): Promise<Chat> {
  const res = await fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, temperature: 0, return_token_ids: true, ...body }),
  });
  const json = (await res.json()) as { model?: string; choices?: { token_ids: number[] }[] };
  return { status: res.status, model: json.model, ids: json.choices?.[0]?.token_ids };
}

async function get<T>(baseUrl: string, route: string): Promise<T> {
  return (await (await fetch(baseUrl.replace(/\/v1$/, '') + route)).json()) as T;
}

type Models = { data: { id: string; root: string; adapter: string | null }[] };

describe('deploy swaps a running local server to the new weights', () => {
  it('loads the adapter beside the base, routes the served name to it, keeps running requests on their weights, and rolls back', async () => {
    const loaded = configIn(CONFIG);
    const { venvDir, defaultModelDir, dataDir } = loaded.paths;
    const python = venvPython(venvDir);
    const adapterDir = path.join(tempDir(), 'lora');
    await execa(python, [MAKE_ADAPTER, defaultModelDir, adapterDir], { env: pythonEnv() });

    // the adapter, registered as the next version of the production line (what a training run does)
    const registered = await withRuntime(loaded, (rt) => {
      const production = syncProduction(rt);
      const baseWeights = rt.store().resources.get(production.members.agents.a1!.weights!)!;
      return registerCheckpoint(rt.store(), {
        path: adapterDir,
        algo: 'sft',
        adapter: true,
        baseModel: `builtin:${LINE}`,
        baseResourceId: baseWeights.id,
        basePath: defaultModelDir,
      });
    });
    expect(registered.resource).toMatchObject({ name: LINE, version: 2 });
    const adapterName = `${LINE}-v2`;

    // what the adapter answers, from a server started on it
    const direct = await startLocalServer({ python, modelDir: adapterDir, servedName: 'direct', maxBatchSize: 2 });
    let own: Chat;
    try {
      own = await chat(direct.baseUrl, 'direct');
    } finally {
      await direct.stop();
    }

    // a run's own server (not production's) is only reported: it lives as long as this test process
    const runsOwn: ServerEntry = {
      base_url: 'http://127.0.0.1:9/v1',
      model: 'local',
      served_name: LINE,
      pid: process.pid,
      started_at: new Date(0).toISOString(),
      host: HOST,
      weights: { dir: defaultModelDir, adapter: false, base_dir: null, resource: null },
      backend: 'transformers',
      follows_production: false,
      owner_pid: process.pid,
    };
    const runsOwnFile = registerServer(dataDir, runsOwn);

    const served = await withRuntime(loaded, (rt) => serve(rt, { model: 'local', port: 0, logFile: false }));
    try {
      const entry = liveServers(dataDir).find((e) => e.pid === served.pid)!;
      expect(entry).toMatchObject({
        base_url: served.baseUrl,
        model: 'local',
        served_name: LINE,
        follows_production: true,
        backend: 'llama.cpp',
        weights: { dir: defaultModelDir, adapter: false },
      });
      expect(served.registryFile).toBe(path.join(dataDir, 'servers', `${served.pid}.json`));
      const base = await chat(served.baseUrl, LINE);
      expect(base.status).toBe(200);
      expect(own.ids).not.toEqual(base.ids); // the adapter answers differently: the swap is visible
      const baseLong = await chat(served.baseUrl, LINE, LONG);

      // a request on the base model is generating while the deploy swaps the weights
      const inFlight = chat(served.baseUrl, LINE, LONG);
      let finished = false;
      void inFlight.then(() => (finished = true));
      for (let i = 0; !(await get<{ busy: boolean }>(served.baseUrl, '/stats')).busy; i++) {
        expect(i).toBeLessThan(500);
        await new Promise((r) => setTimeout(r, 20));
      }
      const deployed = await withRuntime(loaded, (rt) =>
        deploy(rt, { candidate: registered.checkpoint.id, force: true }),
      );
      const finishedDuringSwap = finished;
      expect(deployed.action).toBe('forced');
      expect(deployed.published!.servers).toEqual([
        {
          server: 'http://127.0.0.1:9/v1',
          pid: process.pid,
          model: 'local',
          servedName: LINE,
          weights: `${LINE} v2`,
          action: 'left',
          detail: `it serves ${defaultModelDir} for the run that started it (pid ${process.pid}), not production`,
          calls: [],
        },
        expect.objectContaining({
          server: served.baseUrl,
          pid: served.pid,
          weights: `${LINE} v2`,
          action: 'swapped',
          detail: `${LINE} now serves the adapter ${adapterName}`,
        }),
      ]);
      expect(deployed.published!.servers[1]!.calls.map((c) => [c.action, c.loraName, c.ok])).toEqual([
        ['load', adapterName, true],
        ['set default', adapterName, true],
      ]);

      expect(finishedDuringSwap).toBe(false);
      const kept = await inFlight;
      expect(kept).toEqual({ status: 200, model: LINE, ids: baseLong.ids }); // it ran to the end on the base weights

      const now = await chat(served.baseUrl, LINE);
      expect(now).toEqual({ status: 200, model: LINE, ids: own.ids });
      expect((await chat(served.baseUrl, adapterName)).ids).toEqual(own.ids);
      const models = await get<Models>(served.baseUrl, '/v1/models');
      expect(models.data.map((m) => [m.id, m.root, m.adapter])).toEqual([
        [LINE, adapterDir, adapterName],
        [adapterName, adapterDir, adapterName],
      ]);
      expect(pidAlive(served.pid)).toBe(true); // no restart: the same process
      expect(liveServers(dataDir).find((e) => e.pid === served.pid)!.weights).toEqual({
        dir: adapterDir,
        adapter: true,
        base_dir: defaultModelDir,
        resource: { id: registered.resource.id, name: LINE, version: 2 },
      });

      // back to the base model: the served name routes there again and the adapter is unloaded
      fs.rmSync(runsOwnFile);
      const back = await withRuntime(loaded, (rt) => rollback(rt));
      expect(back.published.servers.map((s) => [s.pid, s.action, s.detail])).toEqual([
        [served.pid, 'swapped', `${LINE} now serves the base model; ${adapterName} unloaded`],
      ]);
      expect(await chat(served.baseUrl, LINE)).toEqual({ status: 200, model: LINE, ids: base.ids });
      expect((await get<Models>(served.baseUrl, '/v1/models')).data.map((m) => m.id)).toEqual([LINE]);

      // a full model cannot be swapped in: reported, the server left as it is
      const full = tempDir({ 'config.json': '{}' });
      const fullCk = await withRuntime(loaded, (rt) =>
        registerCheckpoint(rt.store(), {
          path: full,
          algo: 'sft',
          adapter: false,
          baseModel: `builtin:${LINE}`,
          name: LINE,
        }),
      );
      const third = await withRuntime(loaded, (rt) => deploy(rt, { candidate: fullCk.checkpoint.id, force: true }));
      expect(third.published!.servers.map((s) => [s.action, s.detail])).toEqual([
        ['restart needed', `${LINE} v3 is a full model, not an adapter of the server's base model ${defaultModelDir}`],
      ]);
      expect(await chat(served.baseUrl, LINE)).toEqual({ status: 200, model: LINE, ids: base.ids });
    } finally {
      fs.rmSync(runsOwnFile, { force: true });
      await served.stop();
    }
    await new Promise((r) => setTimeout(r, 50));
    expect(fs.existsSync(served.registryFile)).toBe(false);
    expect(liveServers(dataDir)).toEqual([]);
  }, 300_000);
});

describe('the registry of running local servers', () => {
  it('ignores and removes entries of processes that are gone, and leaves other hosts alone', async () => {
    const dataDir = tempDir();
    const entry = (pid: number, host = HOST): ServerEntry => ({
      base_url: `http://127.0.0.1:${pid}/v1`,
      model: 'local',
      served_name: 'm',
      pid,
      started_at: new Date(pid).toISOString(),
      host,
      weights: { dir: '/m', adapter: false, base_dir: null, resource: null },
      backend: 'transformers',
      follows_production: true,
      owner_pid: pid,
    });
    const gone = execa(process.execPath, ['-e', '']);
    await gone;
    const dead = registerServer(dataDir, entry(gone.pid!));
    const mine = registerServer(dataDir, entry(process.pid));
    const elsewhere = registerServer(dataDir, { ...entry(gone.pid! + 1), host: `not-${HOST}` });
    fs.writeFileSync(path.join(dataDir, 'servers', 'notes.txt'), 'x');
    expect(liveServers(dataDir)).toEqual([entry(process.pid)]);
    expect([fs.existsSync(dead), fs.existsSync(mine), fs.existsSync(elsewhere)]).toEqual([false, true, true]);
    expect(liveServers(tempDir())).toEqual([]);
  });
});
