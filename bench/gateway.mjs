// The gateway against the same backend direct: a zero-latency stub backend (its own process) isolates
// what the gateway adds. Latency at concurrency 1 (plain and streamed), throughput at concurrency 64,
// direct and through the gateway interleaved round by round; the gateway captures every call, and its
// capture rate is its rows written over the time spent writing them. Each process's CPU time per request at
// concurrency 64 says what ratio the machine's cores allow (cpuBoundRatio): through the gateway every request
// costs the client's and the backend's CPU plus the gateway's, all on the same cores.
import { fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { jsonEndpoint, postJson } from '../dist/llm/http.js';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { headline, progress, writeResult } from './lib/report.mjs';
import { median, percentile, roundTo } from './lib/stats.mjs';
import { startStub } from './lib/stub-openai.mjs';
import { makeTempDir, removeTempDir } from './lib/temp-dir.mjs';

const KEY = 'bench-gateway-key-0123456789abcdef';
const SIZES = {
  full: { latencyRequests: 2000, throughputSeconds: 6, rounds: 3, concurrency: 64, modelRequests: 48 },
  quick: { latencyRequests: 300, throughputSeconds: 2, rounds: 2, concurrency: 64, modelRequests: 16 },
};
const MESSAGES = [
  { role: 'system', content: 'You are a careful assistant. Answer with the final number on its own line.' },
  { role: 'user', content: 'A train leaves at 3 pm and travels 120 km at 80 km/h. What is 17 + 25? Explain briefly.' },
];

function startGatewayProcess(dir) {
  const child = fork(fileURLToPath(new URL('./lib/gateway-child.mjs', import.meta.url)), [dir], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, BENCH_GW_KEY: KEY },
  });
  const next = () =>
    new Promise((resolve, reject) => {
      const exited = (code) => reject(new Error(`the gateway exited (${code})`));
      child.once('exit', exited);
      child.once('message', (m) => {
        child.off('exit', exited);
        resolve(m);
      });
    });
  return next().then(({ url }) => ({
    baseUrl: `${url}/v1`,
    stats: () => (child.send('stats'), next()),
    servers: () => (child.send('servers'), next()),
    cpuMs: async () => (child.send('cpu'), (await next()).cpuMs),
    stop: () => (child.send('stop'), next()),
  }));
}

function client(baseUrl) {
  const endpoint = jsonEndpoint(new URL(`${baseUrl}/chat/completions`), { authorization: `Bearer ${KEY}` });
  const plain = JSON.stringify({ model: 'stub', messages: MESSAGES, temperature: 0, max_tokens: 32 });
  const streamed = JSON.stringify({ model: 'stub', messages: MESSAGES, temperature: 0, max_tokens: 32, stream: true });
  return async (stream) => {
    const t0 = performance.now();
    const sink = stream ? () => () => {} : undefined;
    const res = await postJson(endpoint, stream ? streamed : plain, 30_000, undefined, sink);
    if (res.status !== 200) throw new Error(`${baseUrl} answered ${res.status}: ${res.body.slice(0, 200)}`);
    return performance.now() - t0;
  };
}

async function latencies(send, n, stream) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(await send(stream));
  return out;
}

async function throughput(send, concurrency, seconds) {
  let done = 0;
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        await send(false);
        done++;
      }
    }),
  );
  return { done, rps: done / ((performance.now() - t0) / 1000) };
}

/** throughput(), with the CPU time each process spent per request meanwhile (µs): client, backend, gateway. */
async function measured(send, concurrency, seconds, stub, gw) {
  await stub.reset();
  const gw0 = await gw.cpuMs();
  const client0 = process.cpuUsage();
  const { done, rps } = await throughput(send, concurrency, seconds);
  const client = process.cpuUsage(client0);
  const gateway = (await gw.cpuMs()) - gw0;
  const backend = (await stub.stats()).cpuMs;
  const us = (ms) => (ms * 1000) / done;
  return { rps, cpu: { client: us((client.user + client.system) / 1000), backend: us(backend), gateway: us(gateway) } };
}

function latencyFigures(ms) {
  return { p50: roundTo(percentile(ms, 0.5), 3), p99: roundTo(percentile(ms, 0.99), 3), n: ms.length };
}

/**
 * The bundled model behind the gateway at concurrency 16: completion tokens/s through the gateway against
 * the same llama.cpp server direct (the one the gateway started), rounds interleaved.
 */
async function modelPart(size) {
  const dir = makeTempDir('gateway-bench-model');
  fs.writeFileSync(
    path.join(dir, 'massgen-rl.yaml'),
    `models:
  smol:
    model: smollm2-135m-instruct
    local: { weights: "builtin:smollm2-135m-instruct", engine: llama.cpp, max_batch_size: 16 }
agents:
  - { id: a, model: smol }
gateway: { api_keys_env: [BENCH_GW_KEY] }
`,
  );
  const gw = await startGatewayProcess(dir);
  try {
    const body = (model) =>
      JSON.stringify({ model, messages: MESSAGES, temperature: 0, max_tokens: 64, ignore_eos: true });
    const send = async (baseUrl, model) => {
      const endpoint = jsonEndpoint(new URL(`${baseUrl}/chat/completions`), { authorization: `Bearer ${KEY}` });
      const res = await postJson(endpoint, body(model), 600_000);
      if (res.status !== 200) throw new Error(`${baseUrl} answered ${res.status}: ${res.body.slice(0, 200)}`);
      return JSON.parse(res.body).usage.completion_tokens;
    };
    await send(gw.baseUrl, 'smol'); // starts the server
    const [direct] = (await gw.servers()).servers;
    const targets = { direct: () => send(direct, 'smollm2-135m-instruct'), gateway: () => send(gw.baseUrl, 'smol') };
    const rate = async (fn) => {
      let left = size.modelRequests;
      let tokens = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (left-- > 0) {
            // not `tokens += await fn()`: that reads `tokens` before the await and drops the other workers' counts
            const n = await fn();
            tokens += n;
          }
        }),
      );
      return tokens / ((performance.now() - t0) / 1000);
    };
    for (const fn of Object.values(targets)) await rate(fn); // warm-up
    const tps = { direct: [], gateway: [] };
    for (let round = 0; round < size.rounds; round++) {
      for (const [name, fn] of Object.entries(targets)) {
        tps[name].push(await rate(fn));
        progress(
          `model round ${round + 1}/${size.rounds} ${name.padEnd(8)} ${Math.round(tps[name].at(-1))} tokens/s at c16`,
        );
      }
    }
    await gw.stop();
    const d = roundTo(median(tps.direct), 1);
    const g = roundTo(median(tps.gateway), 1);
    return { directTokensPerSec: d, gatewayTokensPerSec: g, ratio: roundTo(g / d, 3), rounds: tps };
  } finally {
    removeTempDir(dir);
  }
}

async function main() {
  const args = parseBenchArgs();
  const size = args.quick ? SIZES.quick : SIZES.full;
  // the model part first, alone on the cores: llama.cpp's threads stall while another process takes a core
  const model = process.env.GATEWAY_BENCH_MODEL === '0' ? null : await modelPart(size);
  const dir = makeTempDir('gateway-bench');
  const stub = await startStub();
  fs.writeFileSync(
    path.join(dir, 'massgen-rl.yaml'),
    `models:
  stub: { base_url: "${stub.baseUrl}", model: stub-model, max_retries: 0 }
agents:
  - { id: a, model: stub }
gateway: { api_keys_env: [BENCH_GW_KEY] }
`,
  );
  const gw = await startGatewayProcess(dir);
  const targets = { direct: client(stub.baseUrl), gateway: client(gw.baseUrl) };
  try {
    for (const send of Object.values(targets)) await latencies(send, 50, false); // warm-up: connections, JIT
    const samples = {
      direct: { plain: [], stream: [], rps: [], cpu: [] },
      gateway: { plain: [], stream: [], rps: [], cpu: [] },
    };
    for (let round = 0; round < size.rounds; round++) {
      for (const [name, send] of Object.entries(targets)) {
        const s = samples[name];
        s.plain.push(...(await latencies(send, size.latencyRequests, false)));
        s.stream.push(...(await latencies(send, size.latencyRequests, true)));
        const m = await measured(send, size.concurrency, size.throughputSeconds, stub, gw);
        s.rps.push(m.rps);
        s.cpu.push(m.cpu);
        const rps = `${Math.round(s.rps.at(-1))} req/s at c${size.concurrency}`;
        progress(`round ${round + 1}/${size.rounds} ${name.padEnd(8)} p50 ${roundTo(median(s.plain), 3)} ms, ${rps}`);
      }
    }
    const final = await gw.stop();
    const fig = (name) => ({
      plain: latencyFigures(samples[name].plain),
      stream: latencyFigures(samples[name].stream),
      rps: roundTo(median(samples[name].rps), 1),
    });
    const direct = fig('direct');
    const through = fig('gateway');
    const added = {
      p50Ms: roundTo(through.plain.p50 - direct.plain.p50, 3),
      p99Ms: roundTo(through.plain.p99 - direct.plain.p99, 3),
      streamP50Ms: roundTo(through.stream.p50 - direct.stream.p50, 3),
    };
    const ratio = roundTo(through.rps / direct.rps, 3);
    const cpuOf = (name) => {
      const rounds = samples[name].cpu;
      const of = (k) => roundTo(median(rounds.map((c) => c[k])), 1);
      return { client: of('client'), backend: of('backend'), gateway: of('gateway') };
    };
    const cpuUsPerRequest = { direct: cpuOf('direct'), gateway: cpuOf('gateway') };
    const total = (c) => c.client + c.backend + c.gateway;
    // both runs CPU-bound on the same cores: their rates stand as the inverse of their CPU per request
    const cpuBoundRatio = roundTo(total(cpuUsPerRequest.direct) / total(cpuUsPerRequest.gateway), 3);
    const rowsPerSec = Math.round(final.stats.written / (final.stats.writeMs / 1000));
    const capture = { ...final.stats, stopMs: roundTo(final.stopMs, 1), rowsPerSec };
    writeResult(args.out, {
      name: 'gateway',
      quick: args.quick,
      params: size,
      direct,
      gateway: through,
      added,
      throughputRatio: ratio,
      cpuUsPerRequest,
      cpuBoundRatio,
      cpus: os.cpus().length,
      capture,
      model,
      headline: [
        headline('added p50 latency (plain, c1)', added.p50Ms, 'ms', 2),
        headline('added p99 latency (plain, c1)', added.p99Ms, 'ms'),
        headline('added p50 latency (streamed, c1)', added.streamP50Ms, 'ms', 2),
        headline(`direct req/s (c${size.concurrency})`, direct.rps, 'req/s'),
        headline(`gateway req/s (c${size.concurrency})`, through.rps, 'req/s'),
        {
          label: `gateway / direct throughput (c${size.concurrency})`,
          value: ratio,
          unit: 'x',
          target: '>= 0.9',
          ok: ratio >= 0.9,
        },
        headline(`gateway CPU per request (c${size.concurrency})`, cpuUsPerRequest.gateway.gateway, 'µs'),
        headline(
          `client + backend CPU per request direct (c${size.concurrency})`,
          roundTo(cpuUsPerRequest.direct.client + cpuUsPerRequest.direct.backend, 1),
          'µs',
        ),
        headline('gateway / direct ratio its CPU per request allows', cpuBoundRatio, 'x'),
        headline('capture rows/s (span build + write)', capture.rowsPerSec, 'rows/s'),
        headline('calls captured (all written on stop)', capture.written, 'calls'),
        ...(model
          ? [
              headline('bundled model direct tokens/s (c16)', model.directTokensPerSec, 'tokens/s'),
              headline('bundled model through the gateway tokens/s (c16)', model.gatewayTokensPerSec, 'tokens/s'),
              {
                label: 'gateway / direct tokens/s, bundled model (c16)',
                value: model.ratio,
                unit: 'x',
                target: '>= 0.97',
                ok: model.ratio >= 0.97,
              },
            ]
          : []),
      ],
    });
  } finally {
    await stub.stop();
    removeTempDir(dir);
  }
}

await main();
