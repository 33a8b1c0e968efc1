import { execa } from 'execa';
import path from 'node:path';
import { expect, it } from 'vitest';
import { pythonEnv } from '../../src/python/module.js';
import { venvPython } from '../../src/python/venv.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { FIXTURES, configIn, tempDir } from '../helpers.js';

// Real parts: the trainer venv, the default model (`massgen-rl doctor --fix`) and a real PEFT LoRA adapter.
const MAKE_ADAPTER = path.join(FIXTURES, 'trainers', 'make_lora_adapter.py');
const LINE = 'smollm2-135m-instruct';
const QUESTION = [{ role: 'user', content: 'What is 2 + 3?' }];

interface Reply {
  choices: { token_ids: number[]; logprobs: { content: { logprob: number }[] } }[];
}

async function ask(baseUrl: string): Promise<Reply> {
  const res = await fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: LINE,
      messages: QUESTION,
      max_tokens: 6,
      temperature: 0,
      logprobs: true,
      return_token_ids: true,
    }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Reply;
}

it("a run's own server serves an adapter merged into the base; the gateway's keeps it unmerged, as deploys swap it", async () => {
  const loaded = configIn(`models:
  local: { model: ${LINE}, local: { weights: "builtin:${LINE}", max_batch_size: 2, engine: llama.cpp } }
agents: [{ id: a1, model: local }]
`);
  const adapterDir = path.join(tempDir(), 'lora');
  await execa(venvPython(loaded.paths.venvDir), [MAKE_ADAPTER, loaded.paths.defaultModelDir, adapterDir, '3', '0.2'], {
    env: pythonEnv(),
  });
  const store = openStore(loaded);
  store.resources.add({
    kind: 'weight',
    name: 'tuned',
    path: adapterDir,
    metadata: { adapter: true, base_path: loaded.paths.defaultModelDir },
  });
  store.close();
  const rt = new Runtime(loaded);
  try {
    const [run, gateway] = await Promise.all([
      rt.servers.server('local', 'resource:tuned@1'),
      rt.servers.server('local', 'resource:tuned@1', true),
    ]);
    expect(run.ready).toMatchObject({ merged: true, adapter: true, adapter_name: null });
    expect(path.basename(String(run.ready.gguf))).toMatch(/^merged-/);
    expect(gateway.ready).toMatchObject({ merged: false, adapter: true, adapter_name: 'tuned-v1' });
    // the same weights either way: the first token and its logprob (bf16 merged against bf16 with the adapter applied)
    const [merged, unmerged] = await Promise.all([ask(run.baseUrl), ask(gateway.baseUrl)]);
    const first = (r: Reply) => [r.choices[0]!.token_ids[0], r.choices[0]!.logprobs.content[0]!.logprob] as const;
    expect(first(merged)[0]).toBe(first(unmerged)[0]);
    expect(Math.abs(first(merged)[1] - first(unmerged)[1])).toBeLessThan(0.1);
  } finally {
    await rt.close();
  }
});
