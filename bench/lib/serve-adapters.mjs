// The "adapters" case of the serve benchmark: one llama.cpp server holding three LoRA adapters of the bundled model
// (made with test/fixtures/trainers/make_lora_adapter.py: r=4 on q_proj and v_proj, random non-zero weights, loaded
// through POST /v1/load_lora_adapter, which converts them to GGUF LoRA). At concurrency C, two cells side by side in
// each round, their order rotating: "one" (every worker on the first adapter) and "three" (worker i on adapter
// i mod 3, so the rows spread evenly). Each worker sends greedy 128-token ignore_eos completions back to back until the
// cell's seconds are up; tokens/s = completion tokens / wall time of the cell. The ratio three/one is the median of
// the per-round ratios; the target is 0.8 (a team of three role adapters keeps 80% of one adapter's throughput).
// --adapters-max-lanes 1 serves every adapter on one context (rows on different adapters in alternate steps), as
// before lanes.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { progress } from './report.mjs';
import { postJson } from './serve-http.mjs';
import { chatBody } from './serve-requests.mjs';
import { startOurServer, trainerPython } from './serve-servers.mjs';
import { median, pairedRatio, roundTo } from './stats.mjs';

const MAKE_ADAPTER = fileURLToPath(new URL('../../test/fixtures/trainers/make_lora_adapter.py', import.meta.url));
export const ADAPTERS_TARGET = 0.8;
const NAMES = ['role-a', 'role-b', 'role-c'];

/** A LoRA adapter of modelDir with random weights (`scale` multiplies its B matrices: 1 changes the model a lot). */
export function makeAdapter(modelDir, out, seed, logFile, scale = 1) {
  return new Promise((resolve, reject) => {
    const log = fs.openSync(logFile, 'a');
    const child = spawn(trainerPython(), [MAKE_ADAPTER, modelDir, out, String(seed), String(scale)], {
      stdio: ['ignore', log, log],
      env: { ...process.env, HF_HUB_OFFLINE: '1' },
    });
    fs.closeSync(log);
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`make_lora_adapter exited ${code}`))));
  });
}

/** C workers, worker i on models[i % models.length], back to back until `seconds` are up (at least one each). */
export async function cell(baseUrl, models, { concurrency, seconds, maxTokens }) {
  const url = `${baseUrl}/chat/completions`;
  let tokens = 0;
  let requests = 0;
  const start = performance.now();
  const worker = async (i) => {
    do {
      const body = {
        ...chatBody(requests + i, { maxTokens, sampled: false, ignoreEos: true }),
        model: models[i % models.length],
      };
      const { usage } = (await postJson(url, body)).body; // awaited before the sum: workers add concurrently
      tokens += usage.completion_tokens;
      requests++;
    } while (performance.now() < start + seconds * 1000);
  };
  await Promise.all(Array.from({ length: concurrency }, (_, i) => worker(i)));
  const wallS = (performance.now() - start) / 1000;
  return { tokensPerS: tokens / wallS, requests, completionTokens: tokens, wallS };
}

/** Runs the case; returns its JSON part (per-round cells, medians, the ratio and whether the target is met). */
export async function runAdapters({
  modelDir,
  logDir,
  maxBatchSize,
  maxTokens,
  rounds,
  seconds,
  concurrency = 16,
  maxLanes = null,
}) {
  const logFile = path.join(logDir, 'adapters.log');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'massgen-bench-adapters-'));
  progress(`adapters: making ${NAMES.length} LoRA adapters of ${modelDir}`);
  const folders = await Promise.all(
    NAMES.map((name, i) => makeAdapter(modelDir, path.join(dir, name), i + 1, logFile)),
  );
  const extraArgs = maxLanes ? ['--max-lanes', String(maxLanes)] : [];
  const server = await startOurServer({ engine: 'llama.cpp', modelDir, maxBatchSize, logFile, extraArgs });
  try {
    for (const [i, name] of NAMES.entries())
      await postJson(`${server.baseUrl}/load_lora_adapter`, { lora_name: name, lora_path: folders[i] });
    await cell(server.baseUrl, NAMES, { concurrency: NAMES.length, seconds: 0, maxTokens: 8 }); // warm-up
    const cells = { one: [NAMES[0]], three: NAMES };
    const samples = { one: [], three: [] };
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 ? ['three', 'one'] : ['one', 'three'];
      for (const key of order) {
        const r = await cell(server.baseUrl, cells[key], { concurrency, seconds, maxTokens });
        samples[key].push(r);
        progress(
          `adapters round ${round + 1} ${key.padEnd(5)} ${r.tokensPerS.toFixed(1).padStart(7)} tok/s  `
            + `${r.requests} req in ${r.wallS.toFixed(1)} s`,
        );
      }
    }
    const tps = (key) => roundTo(median(samples[key].map((s) => s.tokensPerS)), 1);
    const ratio = roundTo(
      pairedRatio(
        samples.three.map((s) => s.tokensPerS),
        samples.one.map((s) => s.tokensPerS),
      ),
      3,
    );
    const stats = await fetch(`${server.baseUrl.replace(/\/v1$/, '')}/stats`)
      .then((r) => r.json())
      .catch(() => null);
    return {
      concurrency,
      maxLanes: maxLanes ?? 'default',
      adapters: NAMES.length,
      oneAdapterTokensPerS: tps('one'),
      threeAdaptersTokensPerS: tps('three'),
      ratio,
      target: ADAPTERS_TARGET,
      met: ratio >= ADAPTERS_TARGET,
      samples,
      server: server.ready,
      steps: stats && { batches: stats.batches, batchSizes: stats.batch_sizes, decodeSteps: stats.decode_steps },
    };
  } finally {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
