// Child process for bench/export.mjs: exports one store to a file and prints its measurements as JSON.
// Running each export in a fresh process keeps its peak RSS separate from the parent and from other sizes.
import { once } from 'node:events';
import fs from 'node:fs';
import { exportRollouts, Store } from '../../dist/store/index.js';
import { timeSeconds } from './timing.mjs';

const RSS_SAMPLE_MS = 5;

async function exportToFile(storeFile, outFile) {
  const store = Store.open({ path: storeFile, mustExist: true });
  try {
    const baselineRss = process.memoryUsage().rss;
    let sampledPeakRss = baselineRss;
    const sampler = setInterval(() => {
      sampledPeakRss = Math.max(sampledPeakRss, process.memoryUsage().rss);
    }, RSS_SAMPLE_MS);
    let result;
    const seconds = await timeSeconds(async () => {
      const out = fs.createWriteStream(outFile);
      result = await exportRollouts(store, out, {});
      out.end();
      await once(out, 'finish');
    });
    clearInterval(sampler);
    return {
      seconds,
      ...result,
      fileBytes: fs.statSync(outFile).size,
      baselineRss,
      sampledPeakRss: Math.max(sampledPeakRss, process.memoryUsage().rss),
      maxRss: process.resourceUsage().maxRSS * 1024,
      firstLineSpans: firstLine(outFile).spans.length,
    };
  } finally {
    store.close();
  }
}

/** Parses the first JSONL line, as a check that the output is well formed. */
function firstLine(file) {
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.alloc(1 << 20);
    const text = buf.subarray(0, fs.readSync(fd, buf, 0, buf.length, 0)).toString('utf8');
    return JSON.parse(text.slice(0, text.indexOf('\n')));
  } finally {
    fs.closeSync(fd);
  }
}

const [storeFile, outFile] = process.argv.slice(2);
if (!storeFile || !outFile) throw new Error('usage: export-worker.mjs STORE OUT');
const measured = await exportToFile(storeFile, outFile);
fs.rmSync(outFile, { force: true });
process.stdout.write(`${JSON.stringify(measured)}\n`);
