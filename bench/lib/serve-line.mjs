// The "line" case of the serve benchmark: what a deployed weight line costs to serve. One LoRA adapter of the bundled
// model (make_lora_adapter.py, r=4 on q_proj and v_proj, B scaled by 0.2: a trained adapter's size of change), and
// three llama.cpp servers up side by side, used one at a time: the base alone, the adapter applied unmerged on the
// base (what the gateway's and `serve`'s servers do, as deploys swap them) and the adapter merged into the base's
// weights (--merge-adapter: a run's own servers). At each concurrency, per round, a cell on each server, their order
// rotating; greedy 128-token ignore_eos completions back to back for the cell's seconds. Ratios: each server's
// tokens/s over the base's, the median of the per-round ratios; the merged line's target is 0.95.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { progress } from './report.mjs';
import { cell, makeAdapter } from './serve-adapters.mjs';
import { startOurServer } from './serve-servers.mjs';
import { median, pairedRatio, roundTo } from './stats.mjs';

export const LINE_TARGET = 0.95;
const SERVERS = ['base', 'unmerged', 'merged'];

/** Runs the case; returns its JSON part (per concurrency: tokens/s of each server, the ratios, the target). */
export async function runLine({ modelDir, logDir, maxBatchSize, maxTokens, rounds, seconds, concurrencies }) {
  const logFile = path.join(logDir, 'line.log');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'massgen-bench-line-'));
  const servers = {};
  try {
    progress(`line: making a LoRA adapter of ${modelDir}`);
    const adapter = await makeAdapter(modelDir, path.join(dir, 'line'), 7, logFile, 0.2);
    const start = (model, extraArgs = []) =>
      startOurServer({ engine: 'llama.cpp', modelDir: model, maxBatchSize, logFile, extraArgs });
    servers.base = await start(modelDir);
    servers.unmerged = await start(adapter);
    const t0 = Date.now();
    servers.merged = await start(adapter, ['--merge-adapter']);
    const mergeSeconds = roundTo((Date.now() - t0) / 1000, 1);
    for (const s of SERVERS) await cell(servers[s].baseUrl, ['bench'], { concurrency: 2, seconds: 0, maxTokens: 8 });
    const byConcurrency = {};
    for (const concurrency of concurrencies) {
      const samples = Object.fromEntries(SERVERS.map((s) => [s, []]));
      for (let round = 0; round < rounds; round++) {
        const order = SERVERS.map((_, i) => SERVERS[(i + round) % SERVERS.length]);
        for (const key of order) {
          const r = await cell(servers[key].baseUrl, ['bench'], { concurrency, seconds, maxTokens });
          samples[key].push(r);
          progress(`line c${concurrency} round ${round + 1} ${key.padEnd(8)} ${r.tokensPerS.toFixed(1)} tok/s`);
        }
      }
      const tps = (key) => samples[key].map((s) => s.tokensPerS);
      const ratio = (key) => roundTo(pairedRatio(tps(key), tps('base')), 3);
      byConcurrency[concurrency] = {
        tokensPerS: Object.fromEntries(SERVERS.map((s) => [s, roundTo(median(tps(s)), 1)])),
        unmergedRatio: ratio('unmerged'),
        mergedRatio: ratio('merged'),
        met: ratio('merged') >= LINE_TARGET,
        samples,
      };
    }
    return { adapterScale: 0.2, mergeSeconds, target: LINE_TARGET, byConcurrency };
  } finally {
    await Promise.all(Object.values(servers).map((s) => s.stop()));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
