// OpenTelemetry out and in. Export: the finished rollouts of a synthetic store sent by exportPending (the official
// OTLP/HTTP exporters, protobuf and JSON) to a collector on loopback that only reads and acknowledges, spans/s.
// Continuous export's cost: a collect on the stub team (each call 100 ms late) with telemetry.otlp.endpoint set
// against the same collect without it, each sample a fresh project, in interleaved rounds (the paired ratio;
// target: at most 3 % added).
// Ingest: the very requests the exporters sent, read by the receiver's reader and stored as rollouts
// (readTraceRequest + ingestSpans, what POST /v1/traces does), spans/s.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { loadConfig } from '../dist/config/load.js';
import { collect } from '../dist/pipeline/collect/collect.js';
import { withRuntime } from '../dist/runtime/runtime.js';
import { Store } from '../dist/store/index.js';
import { exportPending } from '../dist/telemetry/otlp-export.js';
import { ingestSpans } from '../dist/telemetry/otlp-ingest.js';
import { readTraceRequest } from '../dist/telemetry/otlp-read.js';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { headline, progress, writeResult } from './lib/report.mjs';
import { describe, pairedRatio, roundTo } from './lib/stats.mjs';
import { startStub } from './lib/stub-openai.mjs';
import { buildSyntheticStore } from './lib/synthetic-store.mjs';
import { makeTempDir, removeTempDir } from './lib/temp-dir.mjs';
import { runInterleaved, timeSeconds } from './lib/timing.mjs';

const args = parseBenchArgs();
const SIZES = {
  full: { spans: 20_000, spansPerRollout: 50, exportRounds: 3, tasks: 40, collectRounds: 4 },
  quick: { spans: 2_000, spansPerRollout: 50, exportRounds: 1, tasks: 6, collectRounds: 1 },
};
const size = args.quick ? SIZES.quick : SIZES.full;
const PROTOCOLS = ['protobuf', 'json'];
const KEPT_BODIES = 400;
// Each stub call answered this late: a fast hosted model's time (the bundled model takes seconds a call), so that the
// export's cost is set against a collect that waits on its model as real ones do. OTEL_STUB_LATENCY_MS=0: CPU only.
const LATENCY_MS = Number(process.env.OTEL_STUB_LATENCY_MS ?? 100);

/** A collector that reads every request whole and says OK; keeps the first bodies of each type for the ingest part. */
async function startSink() {
  const kept = { protobuf: [], json: [] };
  const totals = { requests: 0, bytes: 0 };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const json = /json/.test(String(req.headers['content-type']));
      const list = kept[json ? 'json' : 'protobuf'];
      if (list.length < KEPT_BODIES) list.push(body);
      totals.requests++;
      totals.bytes += body.length;
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
      res.end(json ? '{}' : '');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  return { origin, kept, totals, close: () => new Promise((resolve) => server.close(resolve)) };
}

const target = (sink, name, protocol) => ({
  endpoint: `${sink.origin}/${name}/v1/traces`,
  protocol,
  headers: {},
  project: 'bench',
  batch_rollouts: 20,
  timeout_ms: 30_000,
});

/** Export spans/s per protocol; each round a new endpoint, so the whole store is pending again. */
async function exportPart(dir, sink) {
  const file = path.join(dir, 'synthetic.sqlite');
  Store.open({ path: file }).close();
  buildSyntheticStore(file, { spans: size.spans, spansPerRollout: size.spansPerRollout });
  const store = Store.open({ path: file });
  try {
    const variants = PROTOCOLS.map((protocol) => ({
      name: protocol,
      run: async () => {
        let r;
        const seconds = await timeSeconds(async () => {
          r = await exportPending(store, target(sink, `${protocol}-${Math.random().toString(36).slice(2)}`, protocol));
        });
        if (r.failed || r.rollouts !== Math.ceil(size.spans / size.spansPerRollout))
          throw new Error(`export ${protocol}: ${JSON.stringify(r)}`);
        return { seconds, spans: r.spans, requests: r.requests, spansPerS: r.spans / seconds };
      },
    }));
    const samples = await runInterleaved(variants, size.exportRounds, (name, round, s) =>
      progress(
        `export round ${round + 1} ${name.padEnd(8)} ${Math.round(s.spansPerS)} spans/s (${s.requests} requests)`,
      ),
    );
    return Object.fromEntries(
      PROTOCOLS.map((p) => [p, { spansPerS: describe(samples[p].map((s) => Math.round(s.spansPerS))) }]),
    );
  } finally {
    store.close();
  }
}

/** Ingest spans/s of the bodies the exporters sent, into a fresh store each, one request per write as the receiver. */
async function ingestPart(dir, sink) {
  const out = {};
  for (const protocol of PROTOCOLS) {
    const bodies = sink.kept[protocol];
    const type = protocol === 'json' ? 'application/json' : 'application/x-protobuf';
    const store = Store.open({ path: path.join(dir, `ingest-${protocol}.sqlite`) });
    let spans = 0;
    try {
      const seconds = await timeSeconds(async () => {
        for (const body of bodies) {
          const r = await ingestSpans(store, readTraceRequest(body, type));
          spans += r.spans.llm + r.spans.tool + r.spans.message;
        }
      });
      out[protocol] = {
        requests: bodies.length,
        spans,
        seconds: roundTo(seconds, 2),
        spansPerS: Math.round(spans / seconds),
      };
      progress(`ingest ${protocol.padEnd(8)} ${out[protocol].spansPerS} spans/s (${bodies.length} requests)`);
    } finally {
      store.close();
    }
  }
  return out;
}

const projectYaml = (stubUrl, endpoint) => `models:
  stub: { base_url: "${stubUrl}", model: stub-model, max_retries: 0 }
agents:
  - { id: a1, model: stub }
  - { id: a2, model: stub }
  - { id: a3, model: stub }
tasks: { sources: [{ suite: arithmetic, n: ${size.tasks} }] }
collect: { concurrency: 4 }
${endpoint ? `telemetry: { otlp: { endpoint: "${endpoint}", interval_ms: 1000 } }\n` : ''}`;

/** A collect's wall seconds without and with continuous export, each sample a fresh project. */
async function collectPart(dir, sink, stub) {
  let n = 0;
  const once = async (endpoint) => {
    const project = path.join(dir, `collect-${++n}`);
    fs.mkdirSync(project);
    fs.writeFileSync(path.join(project, 'massgen-rl.yaml'), projectYaml(stub.baseUrl, endpoint));
    let summary;
    const seconds = await timeSeconds(async () => {
      summary = await withRuntime(loadConfig({ cwd: project }), (rt) => collect(rt, { split: 'all', n: size.tasks }));
    });
    fs.rmSync(project, { recursive: true, force: true });
    return { seconds, rollouts: summary.completed };
  };
  await once(null); // warm-up: module loading, JIT, the stub's connections
  const variants = [
    { name: 'none', run: () => once(null) },
    { name: 'export', run: () => once(`${sink.origin}/collect/v1/traces`) },
  ];
  const samples = await runInterleaved(variants, size.collectRounds, (name, round, s) =>
    progress(`collect round ${round + 1} ${name.padEnd(6)} ${s.seconds.toFixed(2)} s, ${s.rollouts} rollouts`),
  );
  const secs = (name) => samples[name].map((s) => s.seconds);
  const ratios = secs('export').map((x, i) => x / secs('none')[i]);
  return {
    none: describe(secs('none').map((s) => roundTo(s, 2))),
    export: describe(secs('export').map((s) => roundTo(s, 2))),
    ratios: ratios.map((r) => roundTo(r, 3)),
    ratio: roundTo(pairedRatio(secs('export'), secs('none')), 3),
    addedSeconds: roundTo(describe(secs('export')).median - describe(secs('none')).median, 2),
  };
}

async function main() {
  const dir = makeTempDir('otel-bench');
  const sink = await startSink();
  const stub = await startStub({ env: { STUB_LATENCY_MS: String(LATENCY_MS) } });
  try {
    const exported = await exportPart(dir, sink);
    const ingest = await ingestPart(dir, sink);
    const collected = await collectPart(dir, sink, stub);
    const addedPct = roundTo((collected.ratio - 1) * 100, 1);
    writeResult(args.out, {
      name: 'otel',
      quick: args.quick,
      params: {
        ...size,
        protocols: PROTOCOLS,
        collector: 'loopback sink (reads, answers 200)',
        stubLatencyMs: LATENCY_MS,
      },
      export: exported,
      ingest,
      collect: collected,
      headline: [
        headline('export spans/s (protobuf)', exported.protobuf.spansPerS.median, 'spans/s'),
        headline('export spans/s (json)', exported.json.spansPerS.median, 'spans/s'),
        headline('ingest spans/s (protobuf)', ingest.protobuf.spansPerS, 'spans/s'),
        headline('collect with continuous export: added wall time', addedPct, '%', 3),
      ],
    });
  } finally {
    await stub.stop();
    await sink.close();
    removeTempDir(dir);
  }
}

await main();
