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

const stats = async (baseUrl: string) => (await (await fetch(baseUrl.replace(/\/v1$/, '/stats'))).json()) as { threads: number };

describe('a run\'s llama.cpp servers share the cores', () => {
  it('two servers started together (a baseline and a candidate) each decode on their share of the cores', async () => {
    const probe = configIn('');
    const adapterDir = path.join(tempDir(), 'lora');
    await execa(venvPython(probe.paths.venvDir), [MAKE_ADAPTER, probe.paths.defaultModelDir, adapterDir], { env: pythonEnv() });
    const loaded = configIn(`models:
  base: { model: smol, local: { weights: "builtin:smollm2-135m-instruct", engine: llama.cpp, max_batch_size: 2 } }
  tuned: { model: smol, local: { weights: "${adapterDir}", engine: llama.cpp, max_batch_size: 2 } }
agents: [{ id: a, model: base }, { id: b, model: tuned }]
`);
    await withRuntime(loaded, async (rt) => {
      const [base, tuned] = await Promise.all([rt.servers.server('base'), rt.servers.server('tuned')]);
      expect(base.pid).not.toBe(tuned.pid);
      const cores = base.ready.threads as number;
      expect(tuned.ready.threads).toBe(cores); // each started on every core
      expect([(await stats(base.baseUrl)).threads, (await stats(tuned.baseUrl)).threads]).toEqual([threadsEach(cores, 2), threadsEach(cores, 2)]);
      // a second client of a running server starts nothing and changes nothing
      expect((await rt.servers.server('base')).pid).toBe(base.pid);
      expect((await stats(base.baseUrl)).threads).toBe(threadsEach(cores, 2));
      const answer = await fetch(`${tuned.baseUrl}/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'smol', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4, temperature: 0 }),
      });
      expect(answer.status).toBe(200);
    });
  });
});
