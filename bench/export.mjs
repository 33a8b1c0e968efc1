// JSONL export: exportRollouts over synthetic stores of growing size, each export in its own child process.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { headline, MB, progress, writeResult } from './lib/report.mjs';
import { describe, roundTo } from './lib/stats.mjs';
import { buildSyntheticStore } from './lib/synthetic-store.mjs';
import { makeTempDir, removeTempDir, storeBytes } from './lib/temp-dir.mjs';
import { runInterleaved, timeSeconds } from './lib/timing.mjs';

const WORKER = fileURLToPath(new URL('./lib/export-worker.mjs', import.meta.url));
const SPANS_PER_ROLLOUT = 100;
/** The ceiling applies to a 1M-span export only; quick runs report without a target. */
const TARGET_SECONDS_AT_1M = 10;
const SIZES = {
  full: { spans: [100_000, 300_000, 1_000_000], rounds: 5 },
  quick: { spans: [10_000, 30_000, 100_000], rounds: 2 },
};

const run = promisify(execFile);

async function exportInChild(storeFile, outFile) {
  const { stdout } = await run(process.execPath, [WORKER, storeFile, outFile], { maxBuffer: 1 << 20 });
  return JSON.parse(stdout);
}

async function buildStores(dir, sizes) {
  const stores = [];
  for (const spans of sizes) {
    const file = path.join(dir, `store-${spans}.db`);
    let built;
    const seconds = await timeSeconds(() => {
      built = buildSyntheticStore(file, { spans, spansPerRollout: SPANS_PER_ROLLOUT, seed: spans });
    });
    const bytes = storeBytes(file);
    progress(`built ${spans} spans in ${seconds.toFixed(1)} s (${(bytes / MB).toFixed(0)} MB)`);
    stores.push({ ...built, file, bytes, buildSeconds: seconds });
  }
  return stores;
}

function checkSample(store, sample) {
  if (
    sample.spans !== store.spans
    || sample.rollouts !== store.rollouts
    || sample.firstLineSpans !== SPANS_PER_ROLLOUT
  ) {
    throw new Error(`export of ${store.spans} spans returned ${sample.rollouts} rollouts / ${sample.spans} spans`);
  }
}

function summarizeSize(store, samples) {
  const seconds = describe(samples.map((s) => s.seconds));
  const last = samples[samples.length - 1];
  return {
    spans: store.spans,
    rollouts: store.rollouts,
    storeMb: roundTo(store.bytes / MB, 1),
    buildSeconds: roundTo(store.buildSeconds, 2),
    samplesS: samples.map((s) => roundTo(s.seconds, 3)),
    medianS: roundTo(seconds.median, 3),
    minS: roundTo(seconds.min, 3),
    maxS: roundTo(seconds.max, 3),
    spansPerSec: Math.round(store.spans / seconds.median),
    usPerSpan: roundTo((seconds.median / store.spans) * 1e6, 3),
    mbWritten: roundTo(last.fileBytes / MB, 1),
    mbPerSec: roundTo(last.fileBytes / MB / seconds.median, 1),
    peakRssMb: roundTo(Math.max(...samples.map((s) => s.maxRss)) / MB, 1),
    baselineRssMb: roundTo(Math.max(...samples.map((s) => s.baselineRss)) / MB, 1),
    sampledPeakRssMb: roundTo(Math.max(...samples.map((s) => s.sampledPeakRss)) / MB, 1),
  };
}

function headlines(sizes) {
  const smallest = sizes[0];
  const largest = sizes[sizes.length - 1];
  const lines = sizes.map((s) =>
    headline(`export ${s.spans} spans`, s.medianS, 's', s.spans === 1_000_000 ? TARGET_SECONDS_AT_1M : undefined),
  );
  lines.push(headline(`export rate at ${largest.spans}`, largest.spansPerSec, 'spans/s'));
  lines.push(headline(`written at ${largest.spans}`, largest.mbWritten, 'MB'));
  lines.push(headline(`linearity (µs/span at ${largest.spans} / at ${smallest.spans})`, linearity(sizes), 'x'));
  lines.push(headline(`peak RSS of export process at ${largest.spans}`, largest.peakRssMb, 'MB'));
  return lines;
}

function linearity(sizes) {
  return roundTo(sizes[sizes.length - 1].usPerSpan / sizes[0].usPerSpan);
}

async function main() {
  const args = parseBenchArgs();
  const size = args.quick ? SIZES.quick : SIZES.full;
  const dir = makeTempDir('export');
  try {
    progress(`export: building stores of ${size.spans.join(', ')} spans`);
    const stores = await buildStores(dir, size.spans);
    const variants = stores.map((store) => ({
      name: String(store.spans),
      run: async () => {
        const sample = await exportInChild(store.file, path.join(dir, `export-${store.spans}.jsonl`));
        checkSample(store, sample);
        return sample;
      },
    }));
    const samples = await runInterleaved(variants, size.rounds, (name, round, s) => {
      progress(
        `round ${round + 1}/${size.rounds} export ${name.padEnd(8)} ${s.seconds.toFixed(2)} s, peak RSS ${(s.maxRss / MB).toFixed(0)} MB`,
      );
    });
    const sizes = stores.map((store) => summarizeSize(store, samples[String(store.spans)]));
    writeResult(args.out, {
      name: 'export',
      quick: args.quick,
      params: {
        ...size,
        spansPerRollout: SPANS_PER_ROLLOUT,
        payloadBytes: '300-500',
        cache: 'warm (stores just built)',
      },
      sizes,
      linearity: linearity(sizes),
      headline: headlines(sizes),
    });
  } finally {
    removeTempDir(dir);
  }
}

await main();
