import { execa } from 'execa';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { pythonEnv } from '../../src/python/module.js';
import { venvPython } from '../../src/python/venv.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { threadsEach } from '../../src/serving/share-cores.js';
import { FIXTURES, configIn, tempDir } from '../helpers.js';

// Real parts: the trainer venv with llama.cpp, the default model (`massgen-rl doctor --fix`) and a real PEFT adapter.
const MAKE_ADAPTER = path.join(FIXTURES, 'trainers', 'make_lora_adapter.py');

const stats = async (baseUrl: string) =>
  (await (await fetch(baseUrl.replace(/\/v1$/, '/stats'))).json()) as { threads: number };

/** Polls until the server reports `threads` (the division runs between decode steps, so it lands soon after). */
async function threadsBecome(baseUrl: string, threads: number): Promise<void> {
  for (let i = 0; i < 200 && (await stats(baseUrl)).threads !== threads; i++)
    await new Promise((r) => setTimeout(r, 50));
  expect((await stats(baseUrl)).threads).toBe(threads);
}

describe("a run's llama.cpp servers share the cores", () => {
  it('servers decoding side by side (a baseline and a candidate) get their share; one decoding alone gets every core', async () => {
    const probe = configIn('');
    const adapterDir = path.join(tempDir(), 'lora');
    await execa(venvPython(probe.paths.venvDir), [MAKE_ADAPTER, probe.paths.defaultModelDir, adapterDir], {
      env: pythonEnv(),
    });
    const loaded = configIn(`models:
  base: { model: smol, local: { weights: "builtin:smollm2-135m-instruct", engine: llama.cpp, max_batch_size: 2 } }
  tuned: { model: smol, local: { weights: "${adapterDir}", engine: llama.cpp, max_batch_size: 2 } }
agents: [{ id: a, model: base }, { id: b, model: tuned }]
`);
    await withRuntime(loaded, async (rt) => {
      const [base] = await Promise.all([rt.client('base'), rt.client('tuned')]); // starts both servers
      const [baseServer, tunedServer] = await Promise.all([rt.servers.server('base'), rt.servers.server('tuned')]);
      expect(baseServer.pid).not.toBe(tunedServer.pid);
      const cores = baseServer.ready.threads as number;
      expect(tunedServer.ready.threads).toBe(cores); // each started on every core
      // the long request straight to the server (ignore_eos, which the client does not send), counted like the client's
      const raw = {
        chat: async () =>
          (
            await fetch(`${tunedServer.baseUrl}/chat/completions`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({
                model: 'smol',
                messages: [{ role: 'user', content: 'Hi' }],
                max_tokens: 600,
                temperature: 0,
                ignore_eos: true,
              }),
            })
          ).json(),
      } as unknown as typeof base;
      const ask = (client: typeof base, maxTokens: number) =>
        client.chat({
          model: 'smol',
          messages: [{ role: 'user', content: 'Hi' }],
          max_tokens: maxTokens,
          temperature: 0,
        });
      const long = rt.servers.track(tunedServer, raw).chat({ model: 'smol', messages: [] });
      await threadsBecome(tunedServer.baseUrl, cores); // alone: every core
      await ask(base, 8);
      await rt.servers.cores.settled();
      // base's request has ended; both were busy while it ran
      expect((await stats(baseServer.baseUrl)).threads).toBe(threadsEach(cores, 2));
      await threadsBecome(tunedServer.baseUrl, cores);
      expect(((await long) as unknown as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(600);
    });
  });
});
