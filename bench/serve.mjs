// Serving throughput and latency of `python -m massgen_rl_trainers.serve` per engine (transformers, the
// current one, and llama.cpp, the new one) on the bundled model, next to llama-cpp-python's own OpenAI server
// on the GGUF our llama.cpp engine converted, all in one run.
//
// Every server is started first and stays up; only one is loaded at a time. Workload: non-streaming
// /v1/chat/completions, 128-token completions (ignore_eos on our servers; llama-cpp-python has no ignore_eos,
// so its completions may stop early and its tokens are counted from usage, as everyone's are), greedy, from
// a rotating set of short questions; plus one sampled cell (temperature 1, a seed per request). Each cell is
// a closed loop: C workers send requests back to back until the cell's seconds are up (each sends at least
// one) and the cell ends when the last answers. Per round every cell runs once per engine, the engine order
// rotating; figures are medians over rounds (latency percentiles over all requests of all rounds).
//
// Time to first token: no server here streams, so it is the latency of max_tokens=1 probes sent one at a time
// during the load (a probe queues behind the batch or requests already running, as a first token would).
// Memory: VmHWM (peak) and VmRSS of the server process from /proc.
//
// Flags (besides --quick and --out): --engines A,B[,C…] (default transformers,llama.cpp; the first is "current",
// the second "new"; `llama.cpp:shared` is llama.cpp with its KV cache shared by all sequences),
// --concurrency 1,4,16,32, --rounds N, --cell-seconds S, --sampled-at C (0: no sampled cell), --no-reference; or
// (through run-bench) the env vars BENCH_SERVE_ENGINES, BENCH_SERVE_CONCURRENCY, BENCH_SERVE_ROUNDS,
// BENCH_SERVE_CELL_S, BENCH_SERVE_SAMPLED_AT, BENCH_SERVE_REFERENCE=0.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { progress, writeResult } from './lib/report.mjs';
import { roundTo } from './lib/stats.mjs';
import { postJson, runCell, chatBody } from './lib/serve-load.mjs';
import { ratios, summarize, table, targets } from './lib/serve-report.mjs';
import { cacheDir } from '../dist/config/paths.js';
import { defaultModelDir, startOurServer, startReferenceServer } from './lib/serve-servers.mjs';

const REFERENCE = 'llama-cpp-python-server';
const MAX_TOKENS = 128;
const MAX_BATCH_SIZE = 32;
/**
 * A cell lasts at least as long as each of its workers' first request: on a busy 2-core machine a batch of 32
 * 128-token completions on transformers takes minutes, so the time of a run depends mostly on that engine and
 * on the machine's other load, far more than on cellS. quick: no sampled cell, one round, concurrency 1 and 4.
 */
const SIZES = {
  full: { rounds: 3, cellS: 6, concurrency: [1, 4, 16, 32], sampledAt: 4, probes: 2 },
  quick: { rounds: 1, cellS: 2, concurrency: [1, 4], sampledAt: null, probes: 1 },
};

function parseArgs(argv) {
  const own = { engines: process.env.BENCH_SERVE_ENGINES, concurrency: process.env.BENCH_SERVE_CONCURRENCY, rounds: process.env.BENCH_SERVE_ROUNDS, cellS: process.env.BENCH_SERVE_CELL_S, sampledAt: process.env.BENCH_SERVE_SAMPLED_AT, reference: process.env.BENCH_SERVE_REFERENCE !== '0' };
  const flags = { '--engines': 'engines', '--concurrency': 'concurrency', '--rounds': 'rounds', '--cell-seconds': 'cellS', '--sampled-at': 'sampledAt' };
  const rest = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--no-reference') own.reference = false;
    else if (flags[argv[i]]) own[flags[argv[i]]] = argv[++i];
    else rest.push(argv[i]);
  }
  const args = parseBenchArgs(rest);
  const size = { ...(args.quick ? SIZES.quick : SIZES.full) };
  const list = (v, name) => v.split(',').map((x) => { const n = Number(x); if (!(n >= 1)) throw new Error(`${name}: ${v}`); return n; });
  if (own.concurrency) size.concurrency = list(own.concurrency, '--concurrency');
  if (own.rounds) size.rounds = list(own.rounds, '--rounds')[0];
  if (own.cellS) size.cellS = list(own.cellS, '--cell-seconds')[0];
  if (own.sampledAt !== undefined) size.sampledAt = own.sampledAt === '0' ? null : list(own.sampledAt, '--sampled-at')[0];
  const engines = (own.engines ?? 'transformers,llama.cpp').split(',').filter(Boolean);
  return { ...args, size, engines, reference: own.reference };
}

/** Distinct labels when an engine is listed twice (a dry run of the benchmark itself: transformers,transformers). */
function labels(engines) {
  return engines.map((e, i) => (engines.indexOf(e) === i ? e : `${e}#${i + 1}`));
}

async function startAll(args, logDir) {
  const modelDir = defaultModelDir();
  if (!fs.existsSync(path.join(modelDir, 'config.json'))) throw new Error(`no model at ${modelDir} (run \`massgen-rl doctor --fix\`, or set MASSGEN_RL_DEFAULT_MODEL_DIR)`);
  const servers = {};
  for (const [i, label] of labels(args.engines).entries()) {
    progress(`starting ${label} on ${modelDir}`);
    servers[label] = await startOurServer({ engine: args.engines[i], modelDir, maxBatchSize: MAX_BATCH_SIZE, logFile: path.join(logDir, `${label}.log`) });
    progress(`${label} ready in ${servers[label].ready.load_seconds} s (pid ${servers[label].pid})`);
  }
  let reference = { skipped: 'not requested (--no-reference)' };
  if (args.reference) {
    const gguf = Object.values(servers).find((s) => s.ready.gguf)?.ready.gguf ?? newestGguf();
    const threads = os.availableParallelism();
    try {
      if (!gguf) throw new Error(`no GGUF: the llama.cpp engine was not started and ${path.join(cacheDir(), 'gguf')} has none`);
      progress(`starting llama_cpp.server on ${gguf} (${threads} threads)`);
      servers[REFERENCE] = await startReferenceServer({ gguf, threads, logFile: path.join(logDir, `${REFERENCE}.log`) });
      reference = { ...servers[REFERENCE].ready, settings: `defaults, but n_threads = n_threads_batch = ${threads} (the cores)` };
    } catch (err) {
      reference = { skipped: err.message };
      progress(`reference skipped: ${err.message}`);
    }
  }
  return { servers, reference, modelDir };
}

function newestGguf() {
  const dir = path.join(cacheDir(), 'gguf');
  const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.gguf')).map((f) => path.join(dir, f)) : [];
  return files.sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0] ?? null;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const { size } = args;
  const loadAtStart = os.loadavg().map((x) => roundTo(x, 2));
  const started = Date.now();
  const logDir = path.join(os.tmpdir(), 'massgen-bench-serve-logs');
  fs.rmSync(logDir, { recursive: true, force: true });
  fs.mkdirSync(logDir, { recursive: true });
  const { servers, reference, modelDir } = await startAll(args, logDir).catch(async (err) => {
    throw new Error(`${err.message} (server logs in ${logDir})`);
  });
  try {
    const names = Object.keys(servers);
    const ignoreEos = (name) => name !== REFERENCE;
    for (const name of names) await postJson(`${servers[name].baseUrl}/chat/completions`, chatBody(0, { maxTokens: 8, sampled: false, ignoreEos: ignoreEos(name) }));
    const cells = [...size.concurrency.map((c) => ({ key: `c${c}`, concurrency: c, sampled: false })),
      ...(size.sampledAt ? [{ key: `c${size.sampledAt}-sampled`, concurrency: size.sampledAt, sampled: true }] : [])];
    progress(`${size.rounds} round(s) x ${cells.length} cells x ${names.length} servers, ${size.cellS} s per cell, ${MAX_TOKENS} tokens per request`);
    const samples = Object.fromEntries(cells.map((c) => [c.key, Object.fromEntries(names.map((n) => [n, []]))]));
    for (let round = 0; round < size.rounds; round++) {
      for (const [ci, cell] of cells.entries()) {
        for (let i = 0; i < names.length; i++) {
          const name = names[(i + round + ci) % names.length];
          const r = await runCell(servers[name], { ...cell, seconds: size.cellS, maxTokens: MAX_TOKENS, probes: size.probes, ignoreEos: ignoreEos(name) });
          samples[cell.key][name].push(r);
          progress(`round ${round + 1} ${cell.key.padEnd(11)} ${name.padEnd(24)} ${(r.completionTokens / r.wallS).toFixed(1).padStart(7)} tok/s  ${r.requests} req in ${r.wallS.toFixed(1)} s`);
        }
      }
    }
    const results = summarize(samples);
    const [current, newer] = labels(args.engines);
    const newOverCurrent = newer ? ratios(samples, results, newer, current) : null;
    const ratioSets = { ...(newOverCurrent ? { [`${newer}/${current}`]: newOverCurrent } : {}),
      ...(servers[REFERENCE] && newer ? { [`${newer}/reference`]: ratios(samples, results, newer, REFERENCE) } : {}) };
    const goals = targets(newOverCurrent);
    process.stderr.write(`${table(results, ratioSets)}\n`);
    const fig = (cell, engine) => results[cell]?.[engine]?.tokensPerS;
    const top = `c${Math.max(...size.concurrency)}`;
    writeResult(args.out, {
      benchmark: 'serve',
      quick: args.quick,
      seconds: roundTo((Date.now() - started) / 1000, 1),
      loadAverage: { start: loadAtStart, end: os.loadavg().map((x) => roundTo(x, 2)) },
      sizes: { ...size, maxTokens: MAX_TOKENS, maxBatchSize: MAX_BATCH_SIZE, model: modelDir },
      engines: { current, new: newer ?? null, servers: Object.fromEntries(names.map((n) => [n, servers[n].ready])) },
      reference,
      notes: [
        'TTFT: the servers do not stream; ttftMs is the latency of max_tokens=1 probes sent one at a time while the load runs (not counted in the load figures).',
        `Our servers get ignore_eos: true and produce ${MAX_TOKENS} tokens per request; llama-cpp-python's server has no ignore_eos, so it stops at end of sequence: compare its completionTokensPerRequest, and msPerOutputToken (median of request latency / its completion tokens).`,
        'tokensPerS / requestsPerS: medians over rounds of completion tokens (from usage) / wall time of the cell; latencyMs percentiles over every request of every round (with few requests, p99 is close to max).',
        'Ratios: tokensPerS is the median of per-round ratios; latency ratios compare the pooled percentiles. Targets are reported, not asserted.',
        'Other work on this shared machine moves absolute figures; the engines are interleaved within each round so ratios suffer less.',
      ],
      results,
      ratios: ratioSets,
      targets: goals,
      logs: logDir,
      headline: [
        ...names.flatMap((n) => [
          { label: `${n} c1: output tokens/s`, value: fig('c1', n) ?? null, unit: 'tok/s' },
          { label: `${n} ${top}: output tokens/s`, value: fig(top, n) ?? null, unit: 'tok/s' },
        ]),
        ...goals.map((g) => ({ label: g.name, value: g.value, unit: '×', ...(g.met === null ? {} : { target: g.target, ok: g.met }) })),
      ],
    });
  } finally {
    await Promise.all(Object.values(servers).map((s) => s.stop()));
  }
}

main().catch((err) => {
  console.error(err.stack ?? err.message);
  process.exitCode = 1;
});
