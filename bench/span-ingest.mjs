// Span ingest: the store API (SpanWriter, with and without a Redactor) against raw better-sqlite3 inserts
// of the same rows, in the same transaction sizes, into identically created store files.
import path from 'node:path';
import { Redactor, Store } from '../dist/store/index.js';
import { storeDb } from '../dist/store/store.js';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { agentName, chatPayload } from './lib/payloads.mjs';
import { createRng } from './lib/random.mjs';
import { headline, progress, writeResult } from './lib/report.mjs';
import { SPAN_INSERT_SQL, spanRow } from './lib/span-rows.mjs';
import { describe, median, pairedRatio, roundTo } from './lib/stats.mjs';
import { makeTempDir, removeTempDir } from './lib/temp-dir.mjs';
import { runInterleaved, timeSeconds } from './lib/timing.mjs';

const SECRET_ENV = { BENCH_KEY: 'sk-bench-secret-value-123456' };
const BATCH_SIZES = [64, 256];
/** A multiple of every batch size, so every transaction holds exactly batchSize rows. */
const SPANS_PER_ROLLOUT = 1024;
const POOL_SIZE = 4096;
const SECRET_RATE = 0.02;
const TARGET_RATIO = 1.5;
const SIZES = {
  full: { spansPerVariant: 204_800, rounds: 8 },
  quick: { spansPerVariant: 24_576, rounds: 3 },
};

function realisticRedactor() {
  return Redactor.fromSettings({ envNames: ['BENCH_KEY'], patterns: [], builtinPatterns: true }, SECRET_ENV);
}

/**
 * Prompt spans with chat payloads of 600 B to 2 KB of JSON. Payloads go through a JSON round trip so they
 * are built like parsed API responses (flat strings), not like strings grown by concatenation.
 */
function promptSpanPool(size) {
  const rng = createRng(42);
  const start = Date.UTC(2025, 0, 1);
  return Array.from({ length: size }, (_, i) => ({
    type: 'prompt',
    name: 'chat.completion',
    agent: agentName(rng),
    startedAt: start + i * 37.5,
    durationMs: rng.int(80, 9000),
    payload: asParsed(
      chatPayload(rng, { targetBytes: rng.int(600, 2000), secretRate: SECRET_RATE, envSecret: SECRET_ENV.BENCH_KEY }),
    ),
  }));
}

function asParsed(value) {
  return JSON.parse(JSON.stringify(value));
}

function writeThroughApi(store, rolloutIds, pool, batchSize) {
  let i = 0;
  for (const id of rolloutIds) {
    const writer = store.spans.writer(id, batchSize);
    for (let k = 0; k < SPANS_PER_ROLLOUT; k++) writer.add(pool[i++ % pool.length]);
    writer.flush();
  }
}

/** The baseline: what a hand-written writer does (serialize, buffer, one IMMEDIATE transaction per batch). */
function writeRaw(store, rolloutIds, pool, batchSize) {
  const insert = storeDb(store).prepare(SPAN_INSERT_SQL);
  const insertRows = storeDb(store).transaction((rows) => {
    for (const row of rows) insert.run(row);
  });
  let i = 0;
  for (const id of rolloutIds) {
    let rows = [];
    for (let seq = 1; seq <= SPANS_PER_ROLLOUT; seq++) {
      const span = pool[i++ % pool.length];
      rows.push(spanRow(id, seq, span, JSON.stringify(span.payload)));
      if (rows.length === batchSize) {
        insertRows.immediate(rows);
        rows = [];
      }
    }
    if (rows.length) insertRows.immediate(rows);
  }
}

/** One sample: a fresh store, rollouts created untimed, then the timed span writes. */
async function ingestSample(variant, pool, spans, inspect) {
  const dir = makeTempDir('ingest');
  const store = Store.open({ path: path.join(dir, 'store.db'), redactor: variant.redactor });
  try {
    const ids = Array.from({ length: spans / SPANS_PER_ROLLOUT }, () => store.rollouts.start({ source: 'bench' }));
    const seconds = await timeSeconds(() => variant.write(store, ids, pool, variant.batchSize));
    inspect?.(store);
    return seconds;
  } finally {
    store.close();
    removeTempDir(dir);
  }
}

function ingestVariants() {
  const kinds = [
    { kind: 'api-redact', redactor: realisticRedactor(), write: writeThroughApi },
    { kind: 'api-plain', redactor: Redactor.none(), write: writeThroughApi },
    { kind: 'raw', redactor: Redactor.none(), write: writeRaw },
  ];
  return BATCH_SIZES.flatMap((batchSize) => kinds.map((k) => ({ ...k, batchSize, name: `${k.kind}/${batchSize}` })));
}

/** Serialization alone, without the database: isolates what the redactor adds per span. */
function encodeVariants(pool, spans) {
  const encode = (fn) => () =>
    timeSeconds(() => {
      let bytes = 0;
      for (let i = 0; i < spans; i++) bytes += fn(pool[i % pool.length].payload).length;
      return bytes;
    });
  const redactor = realisticRedactor();
  return [
    { name: 'encode-stringify', run: encode((p) => JSON.stringify(p)) },
    { name: 'encode-redactor', run: encode((p) => redactor.json(p)) },
  ];
}

/** A small untimed pass of every variant: JIT warm-up, plus a check that rows landed and secrets were scrubbed. */
async function warmUpAndVerify(variants, pool) {
  const checks = {};
  for (const variant of variants) {
    await ingestSample(variant, pool, SPANS_PER_ROLLOUT * 2, (store) => {
      const rows = storeDb(store).prepare('SELECT COUNT(*) FROM spans').pluck().get();
      const leaks = storeDb(store)
        .prepare("SELECT COUNT(*) FROM spans WHERE payload LIKE '%sk-bench-secret%'")
        .pluck()
        .get();
      checks[variant.name] = { rows, rowsWithSecret: leaks };
    });
  }
  for (const [name, c] of Object.entries(checks)) {
    if (c.rows !== SPANS_PER_ROLLOUT * 2)
      throw new Error(`${name} wrote ${c.rows} rows, expected ${SPANS_PER_ROLLOUT * 2}`);
    if (name.startsWith('api-redact') && c.rowsWithSecret)
      throw new Error(`${name} stored ${c.rowsWithSecret} unscrubbed secrets`);
  }
  return checks;
}

function payloadStats(pool) {
  const sizes = pool.map((s) => JSON.stringify(s.payload).length);
  const withSecret = pool.filter((s) => realisticRedactor().json(s.payload) !== JSON.stringify(s.payload)).length;
  return {
    ...describe(sizes),
    mean: Math.round(sizes.reduce((a, b) => a + b, 0) / sizes.length),
    shareWithSecret: withSecret / pool.length,
  };
}

function summarize(samples, spansPerSample) {
  const variants = Object.fromEntries(
    Object.entries(samples).map(([name, s]) => {
      const d = describe(s);
      return [
        name,
        {
          samplesS: s.map((x) => roundTo(x, 4)),
          medianS: roundTo(d.median, 4),
          minS: roundTo(d.min, 4),
          maxS: roundTo(d.max, 4),
          spansPerSec: Math.round(spansPerSample / d.median),
        },
      ];
    }),
  );
  const ratio = (a, b) => ({
    ofMedians: roundTo(median(samples[a]) / median(samples[b])),
    pairedMedian: roundTo(pairedRatio(samples[a], samples[b])),
  });
  const ratios = Object.fromEntries(
    BATCH_SIZES.map((b) => [
      b,
      {
        apiRedactOverRaw: ratio(`api-redact/${b}`, `raw/${b}`),
        apiPlainOverRaw: ratio(`api-plain/${b}`, `raw/${b}`),
        apiRedactOverApiPlain: ratio(`api-redact/${b}`, `api-plain/${b}`),
      },
    ]),
  );
  const encodeUs = (name) => (median(samples[name]) / spansPerSample) * 1e6;
  const encode = {
    stringifyUsPerSpan: roundTo(encodeUs('encode-stringify'), 2),
    redactorJsonUsPerSpan: roundTo(encodeUs('encode-redactor'), 2),
    redactionUsPerSpan: roundTo(encodeUs('encode-redactor') - encodeUs('encode-stringify'), 2),
  };
  return { variants, ratios, encode };
}

function headlines({ variants, ratios, encode }) {
  const lines = [];
  for (const b of BATCH_SIZES) {
    for (const kind of ['raw', 'api-plain', 'api-redact']) {
      lines.push(headline(`${kind} spans/s (batch ${b})`, variants[`${kind}/${b}`].spansPerSec, 'spans/s'));
    }
    lines.push(
      headline(`api+redactor / raw time (batch ${b})`, ratios[b].apiRedactOverRaw.ofMedians, 'x', TARGET_RATIO),
    );
    lines.push(headline(`api no redactor / raw time (batch ${b})`, ratios[b].apiPlainOverRaw.ofMedians, 'x'));
  }
  lines.push(headline('redaction cost (encode only)', encode.redactionUsPerSpan, 'µs/span'));
  return lines;
}

async function main() {
  const args = parseBenchArgs();
  const size = args.quick ? SIZES.quick : SIZES.full;
  const spansPerSample = size.spansPerVariant / size.rounds;
  const pool = promptSpanPool(POOL_SIZE);
  const ingest = ingestVariants();
  progress(`span-ingest: ${ingest.length} variants x ${size.rounds} rounds x ${spansPerSample} spans, interleaved`);
  const checks = await warmUpAndVerify(ingest, pool);
  const all = [
    ...ingest.map((v) => ({ name: v.name, run: () => ingestSample(v, pool, spansPerSample) })),
    ...encodeVariants(pool, spansPerSample),
  ];
  const samples = await runInterleaved(all, size.rounds, (name, round, s) => {
    if (!name.startsWith('encode'))
      progress(`round ${round + 1}/${size.rounds} ${name.padEnd(15)} ${Math.round(spansPerSample / s)} spans/s`);
  });
  const summary = summarize(samples, spansPerSample);
  writeResult(args.out, {
    name: 'span-ingest',
    quick: args.quick,
    params: {
      ...size,
      spansPerSample,
      spansPerRollout: SPANS_PER_ROLLOUT,
      batchSizes: BATCH_SIZES,
      poolSize: POOL_SIZE,
    },
    payloadBytes: payloadStats(pool),
    checks,
    ...summary,
    headline: headlines(summary),
  });
}

await main();
