// Serving throughput and latency of `python -m massgen_rl_serving` per engine (transformers, the
// current one, and llama.cpp, the new one) on the bundled model, next to llama-cpp-python's own OpenAI server
// on the GGUF our llama.cpp engine converted, all in one run; then request modes on our llama.cpp engine.
//
// Every server is started first and stays up; only one is loaded at a time. Workload: non-streaming
// /v1/chat/completions, 128-token completions (ignore_eos on our servers; llama-cpp-python has no ignore_eos,
// so its completions may stop early and its tokens are counted from usage, as everyone's are), greedy, from
// a rotating set of short questions; plus one sampled cell (temperature 1, a seed per request). Each cell is
// a closed loop: C workers send requests back to back until the cell's seconds are up (each sends at least
// one) and the cell ends when the last answers. Per round every cell runs once per engine, the engine order
// rotating; figures are medians over rounds (latency percentiles over all requests of all rounds).
//
// Time to first token of the engines: the latency of max_tokens=1 probes sent one at a time during the load (a
// probe queues behind the batch or requests already running, as a first token would).
// Memory: VmHWM (peak) and VmRSS of the server process from /proc.
//
// Request modes (llama.cpp engine, default bf16; same cells, rounds and 128-token budget): plain (as above),
// stream (the same requests streamed with include_usage; TTFT = send → first chunk carrying content), tools
// (MassGen-shaped: new_answer and vote, tool_choice required, parallel_tool_calls false, so the grammar
// constrains every reply) and tools-text (the tools request's prompt as plain text: no grammar). Per round the
// modes of a cell run back to back, their order rotating, so machine noise hits each mode alike.
//
// Flags (besides --quick and --out): --engines A,B[,C…] (default transformers,llama.cpp; the first is "current",
// the second "new"; `llama.cpp:shared` is llama.cpp with its KV cache shared by all sequences; `none`: modes only),
// --concurrency 1,4,16,32, --rounds N, --cell-seconds S, --sampled-at C (0: no sampled cell), --no-reference,
// --modes plain,stream,tools,tools-text (none: skip), --modes-concurrency 1,16, --modes-requests N (each worker of
// a modes cell sends at least N; default 3, quick 1), --tool-max-tokens N (tools and tools-text; default 128 like
// the rest); or (through run-bench) the env vars BENCH_SERVE_ENGINES, BENCH_SERVE_CONCURRENCY, BENCH_SERVE_ROUNDS,
// BENCH_SERVE_CELL_S, BENCH_SERVE_SAMPLED_AT, BENCH_SERVE_REFERENCE=0, BENCH_SERVE_MODES,
// BENCH_SERVE_MODES_CONCURRENCY, BENCH_SERVE_MODES_REQUESTS, BENCH_SERVE_TOOL_MAX_TOKENS.
//
// Adapters (bench/lib/serve-adapters.mjs): one adapter against three adapters on one base, rows spread evenly, at
// concurrency 16 (--adapters-concurrency N, `none` to skip; env BENCH_SERVE_ADAPTERS), the ratio's target 0.8;
// --adapters-max-lanes N (BENCH_SERVE_ADAPTERS_MAX_LANES) passes serve --max-lanes (1: as before lanes).
// A deployed line (bench/lib/serve-line.mjs): the base, one adapter unmerged and the same adapter merged, at
// concurrency 1 and 16 (--line-concurrency 1,16, `none` to skip; env BENCH_SERVE_LINE), the merged one's target 0.95.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cacheDir } from '../dist/config/paths.js';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { progress, writeResult } from './lib/report.mjs';
import { runAdapters } from './lib/serve-adapters.mjs';
import { postJson, postStream } from './lib/serve-http.mjs';
import { runLine } from './lib/serve-line.mjs';
import { runCell } from './lib/serve-load.mjs';
import { modeRatios, modesTable, modeTargets, ratios, summarize, table, targets } from './lib/serve-report.mjs';
import { chatBody, MODES, toolBody } from './lib/serve-requests.mjs';
import { defaultModelDir, startOurServer, startReferenceServer } from './lib/serve-servers.mjs';
import { roundTo } from './lib/stats.mjs';

const REFERENCE = 'llama-cpp-python-server';
const MAX_TOKENS = 128;
const MAX_BATCH_SIZE = 32;
const MODES_ENGINE = 'llama.cpp';
/**
 * A cell lasts at least as long as each of its workers' first request: on a busy 2-core machine a batch of 32
 * 128-token completions on transformers takes minutes, so the time of a run depends mostly on that engine and
 * on the machine's other load, far more than on cellS. quick: no sampled cell, one round, concurrency 1 and 4.
 */
const SIZES = {
  full: {
    rounds: 3,
    cellS: 6,
    concurrency: [1, 4, 16, 32],
    sampledAt: 4,
    probes: 2,
    modesConcurrency: [1, 16],
    modesMinRequests: 3,
  },
  quick: {
    rounds: 1,
    cellS: 2,
    concurrency: [1, 4],
    sampledAt: null,
    probes: 1,
    modesConcurrency: [1, 16],
    modesMinRequests: 1,
  },
};

function parseArgs(argv) {
  const env = process.env;
  const own = {
    engines: env.BENCH_SERVE_ENGINES,
    concurrency: env.BENCH_SERVE_CONCURRENCY,
    rounds: env.BENCH_SERVE_ROUNDS,
    cellS: env.BENCH_SERVE_CELL_S,
    sampledAt: env.BENCH_SERVE_SAMPLED_AT,
    reference: env.BENCH_SERVE_REFERENCE !== '0',
    modes: env.BENCH_SERVE_MODES,
    modesConcurrency: env.BENCH_SERVE_MODES_CONCURRENCY,
    toolMaxTokens: env.BENCH_SERVE_TOOL_MAX_TOKENS,
    modesMinRequests: env.BENCH_SERVE_MODES_REQUESTS,
    adapters: env.BENCH_SERVE_ADAPTERS,
    adaptersMaxLanes: env.BENCH_SERVE_ADAPTERS_MAX_LANES,
    line: env.BENCH_SERVE_LINE,
  };
  const flags = {
    '--engines': 'engines',
    '--concurrency': 'concurrency',
    '--rounds': 'rounds',
    '--cell-seconds': 'cellS',
    '--sampled-at': 'sampledAt',
    '--modes': 'modes',
    '--modes-concurrency': 'modesConcurrency',
    '--tool-max-tokens': 'toolMaxTokens',
    '--modes-requests': 'modesMinRequests',
    '--adapters-concurrency': 'adapters',
    '--adapters-max-lanes': 'adaptersMaxLanes',
    '--line-concurrency': 'line',
  };
  const rest = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--no-reference') own.reference = false;
    else if (flags[argv[i]]) own[flags[argv[i]]] = argv[++i];
    else rest.push(argv[i]);
  }
  const args = parseBenchArgs(rest);
  const size = { ...(args.quick ? SIZES.quick : SIZES.full) };
  const list = (v, name) =>
    v.split(',').map((x) => {
      const n = Number(x);
      if (!(n >= 1)) throw new Error(`${name}: ${v}`);
      return n;
    });
  if (own.concurrency) size.concurrency = list(own.concurrency, '--concurrency');
  if (own.rounds) size.rounds = list(own.rounds, '--rounds')[0];
  if (own.cellS) size.cellS = list(own.cellS, '--cell-seconds')[0];
  if (own.sampledAt !== undefined)
    size.sampledAt = own.sampledAt === '0' ? null : list(own.sampledAt, '--sampled-at')[0];
  if (own.modesConcurrency) size.modesConcurrency = list(own.modesConcurrency, '--modes-concurrency');
  if (own.modesMinRequests) size.modesMinRequests = list(own.modesMinRequests, '--modes-requests')[0];
  size.adaptersConcurrency = ['none', '0'].includes(own.adapters) ? null : list(own.adapters ?? '16', '--adapters')[0];
  size.adaptersMaxLanes = own.adaptersMaxLanes ? list(own.adaptersMaxLanes, '--adapters-max-lanes')[0] : null;
  size.lineConcurrency = ['none', '0'].includes(own.line) ? null : list(own.line ?? '1,16', '--line-concurrency');
  size.toolMaxTokens = own.toolMaxTokens ? list(own.toolMaxTokens, '--tool-max-tokens')[0] : MAX_TOKENS;
  const names = (v) => (v === 'none' || v === '0' ? [] : v.split(',').filter(Boolean));
  const engines = names(own.engines ?? 'transformers,llama.cpp');
  const modes = names(own.modes ?? Object.keys(MODES).join(','));
  const unknown = modes.filter((m) => !MODES[m]);
  if (unknown.length) throw new Error(`--modes: no ${unknown.join(', ')} (have: ${Object.keys(MODES).join(', ')})`);
  return { ...args, size, engines, modes, reference: own.reference && engines.length > 0 };
}

/** Distinct labels when an engine is listed twice (a dry run of the benchmark itself: transformers,transformers). */
function labels(engines) {
  return engines.map((e, i) => (engines.indexOf(e) === i ? e : `${e}#${i + 1}`));
}

async function startAll(args, logDir) {
  const modelDir = defaultModelDir();
  if (!fs.existsSync(path.join(modelDir, 'config.json')))
    throw new Error(`no model at ${modelDir} (run \`massgen-rl doctor --fix\`, or set MASSGEN_RL_DEFAULT_MODEL_DIR)`);
  const servers = {};
  for (const [i, label] of labels(args.engines).entries()) {
    progress(`starting ${label} on ${modelDir}`);
    servers[label] = await startOurServer({
      engine: args.engines[i],
      modelDir,
      maxBatchSize: MAX_BATCH_SIZE,
      logFile: path.join(logDir, `${label}.log`),
    });
    progress(`${label} ready in ${servers[label].ready.load_seconds} s (pid ${servers[label].pid})`);
  }
  let modesServer = null;
  if (args.modes.length) {
    const label = labels(args.engines).find((l, i) => args.engines[i] === MODES_ENGINE);
    if (label) modesServer = servers[label];
    else {
      progress(`starting ${MODES_ENGINE} (request modes) on ${modelDir}`);
      const logFile = path.join(logDir, `${MODES_ENGINE}-modes.log`);
      modesServer = await startOurServer({ engine: MODES_ENGINE, modelDir, maxBatchSize: MAX_BATCH_SIZE, logFile });
    }
  }
  let reference = { skipped: 'not requested (--no-reference)' };
  if (args.reference) {
    const gguf = Object.values(servers).find((s) => s.ready.gguf)?.ready.gguf ?? newestGguf();
    const threads = os.availableParallelism();
    try {
      if (!gguf)
        throw new Error(`no GGUF: the llama.cpp engine was not started and ${path.join(cacheDir(), 'gguf')} has none`);
      progress(`starting llama_cpp.server on ${gguf} (${threads} threads)`);
      servers[REFERENCE] = await startReferenceServer({
        gguf,
        threads,
        logFile: path.join(logDir, `${REFERENCE}.log`),
      });
      reference = {
        ...servers[REFERENCE].ready,
        settings: `defaults, but n_threads = n_threads_batch = ${threads} (the cores)`,
      };
    } catch (err) {
      reference = { skipped: err.message };
      progress(`reference skipped: ${err.message}`);
    }
  }
  return { servers, reference, modelDir, modesServer };
}

/**
 * Before the modes' load: the same greedy request sent plain and streamed, alone, must give the same text and
 * usage, and a tool call must read the same streamed (reassembled from its deltas) as not.
 */
async function modeChecks(server) {
  const url = `${server.baseUrl}/chat/completions`;
  const opts = { maxTokens: 32, sampled: false, ignoreEos: true };
  const plain = (await postJson(url, chatBody(1, opts))).body;
  const streamed = await postStream(url, chatBody(1, opts));
  // a named vote: short enough to end within max_tokens, where a new_answer of this model often does not
  const toolOpts = { ...opts, maxTokens: MAX_TOKENS, toolChoice: { type: 'function', function: { name: 'vote' } } };
  const call = (await postJson(url, toolBody(1, toolOpts))).body.choices[0];
  const callStreamed = await postStream(url, toolBody(1, toolOpts));
  const calls = (list) => JSON.stringify(list.map((c) => ({ name: c.name, arguments: c.arguments })));
  return {
    streamSameText: plain.choices[0].message.content === streamed.content,
    // token counts: the streamed request finds the plain one's prompt in the KV cache (prompt_tokens_details)
    streamSameUsage: ['prompt_tokens', 'completion_tokens'].every((k) => plain.usage[k] === streamed.usage?.[k]),
    streamProblems: streamed.problems,
    toolCallSameStreamed: calls((call.message.tool_calls ?? []).map((c) => c.function)) === calls(callStreamed.calls),
    toolCallFinish: { plain: call.finish_reason, streamed: callStreamed.finish },
    toolStreamProblems: callStreamed.problems,
  };
}

/** The request modes on one server: cells × modes per round, the order rotating; null when no mode is asked. */
async function runModes(args, server) {
  const { size, modes } = args;
  if (!modes.length) return null;
  const checks = await modeChecks(server);
  progress(`request-mode checks: ${JSON.stringify(checks)}`);
  const cells = size.modesConcurrency.map((c) => ({ key: `c${c}`, concurrency: c }));
  progress(`modes: ${size.rounds} round(s) x ${cells.length} cells x ${modes.join(', ')} on ${server.engine}`);
  const samples = Object.fromEntries(cells.map((c) => [c.key, Object.fromEntries(modes.map((m) => [m, []]))]));
  for (let round = 0; round < size.rounds; round++) {
    for (const [ci, cell] of cells.entries()) {
      for (let i = 0; i < modes.length; i++) {
        const mode = modes[(i + round + ci) % modes.length];
        const maxTokens = mode.startsWith('tools') ? size.toolMaxTokens : MAX_TOKENS;
        const r = await runCell(server, {
          concurrency: cell.concurrency,
          seconds: size.cellS,
          maxTokens,
          sampled: false,
          probes: size.probes,
          ignoreEos: true,
          mode,
          minRequests: size.modesMinRequests,
        });
        samples[cell.key][mode].push(r);
        const tps = (r.completionTokens / r.wallS).toFixed(1).padStart(7);
        const line = `${tps} tok/s  ${r.requests} req in ${r.wallS.toFixed(1)} s`;
        progress(`round ${round + 1} ${cell.key.padEnd(5)} ${mode.padEnd(11)} ${line}`);
      }
    }
  }
  const results = summarize(samples);
  const byCell = modeRatios(samples, results);
  return {
    server: server.engine,
    weights: server.ready.weights,
    modes,
    checks,
    results,
    ratios: byCell,
    targets: modeTargets(byCell),
  };
}

function newestGguf() {
  const dir = path.join(cacheDir(), 'gguf');
  const files = fs.existsSync(dir)
    ? fs
        .readdirSync(dir)
        .filter((f) => f.endsWith('.gguf'))
        .map((f) => path.join(dir, f))
    : [];
  return files.sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0] ?? null;
}

const MODE_NOTES = [
  'Modes run on one llama.cpp server (its default weights) with ignore_eos; max_tokens as the engines (tools and '
    + 'tools-text: sizes.toolMaxTokens). Per round each cell runs every mode back to back, the order rotating; ratios '
    + 'of tokens/s are medians of per-round ratios.',
  'ttftStreamMs: client-side, from sending the request to the first streamed chunk whose delta carries content (or '
    + 'tool_calls); the first, role-only chunk does not count. ttftMs (every mode): max_tokens=1 probes beside the '
    + 'load, as for the engines.',
  'Each worker of a modes cell sends at least sizes.modesMinRequests requests (quick: 1). With one, a cell is a '
    + 'single wave whose tail (the batch emptying as replies end) counts against modes whose replies end early '
    + '(tools): quick ratios carry that tail.',
  'A grammar-constrained reply ends when its call is complete (the grammar then allows only end of sequence, which '
    + 'ends it even with ignore_eos), so tool calls may make fewer tokens per request than plain requests '
    + '(completionTokensPerRequest): compare tokens/s and msPerOutputToken, not requests/s. toolSlowdown = '
    + 'plain/tools tokens/s (above 1: tool calls slower); it includes the longer prompt (promptTokensPerRequest).',
  "tools-text sends the tools request's prompt (the tool instructions and schemas as text, as the server's generic "
    + 'format writes them) without tools: grammarSlowdown = tools-text/tools tokens/s is the grammar and the call '
    + 'parsing alone.',
  'calls.validShare: replies whose message.tool_calls is exactly one call of new_answer or vote with arguments '
    + 'valid for its JSON Schema (ajv); a call cut by max_tokens is not valid (cutByMaxTokens, validShareNotCut).',
  'tools requests are not streamed (nor is the plain baseline). checks: a greedy request sent plain and streamed, '
    + 'alone, before the load, must give the same text and usage; a named vote call the same call.',
];

/** The summary lines of the request modes: tokens/s ratios with their targets, streamed TTFT, valid calls. */
function modeHeadline(modes) {
  const lines = modes.targets.map((g) => ({
    label: g.name,
    value: g.value,
    unit: '×',
    ...(g.met === null ? {} : { target: g.target, ok: g.met }),
  }));
  for (const [cell, byMode] of Object.entries(modes.results)) {
    for (const mode of ['plain', 'stream', 'tools']) {
      const tps = byMode[mode]?.tokensPerS;
      if (tps !== undefined) lines.push({ label: `${mode} ${cell}: output tokens/s`, value: tps, unit: 'tok/s' });
    }
    const ttft = byMode.stream?.ttftStreamMs;
    if (ttft) {
      lines.push({ label: `stream ${cell}: TTFT p50 (first content chunk)`, value: ttft.p50, unit: 'ms' });
      lines.push({ label: `stream ${cell}: TTFT p99 (first content chunk)`, value: ttft.p99, unit: 'ms' });
    }
    const calls = byMode.tools?.calls;
    if (calls) lines.push({ label: `tools ${cell}: valid calls`, value: calls.validShare, unit: 'share' });
  }
  return lines;
}

function adaptersHeadline(a) {
  const c = `c${a.concurrency}`;
  return [
    { label: `adapters ${c}: 1 adapter tokens/s`, value: a.oneAdapterTokensPerS, unit: 'tok/s' },
    { label: `adapters ${c}: ${a.adapters} adapters tokens/s`, value: a.threeAdaptersTokensPerS, unit: 'tok/s' },
    { label: `adapters ${c}: ${a.adapters} adapters / 1`, value: a.ratio, unit: '×', target: a.target, ok: a.met },
  ];
}

function lineHeadline(l) {
  return Object.entries(l.byConcurrency).flatMap(([c, r]) => [
    { label: `line c${c}: adapter unmerged / base`, value: r.unmergedRatio, unit: '×' },
    {
      label: `line c${c}: adapter merged / base`,
      value: r.mergedRatio,
      unit: '×',
      target: `>= ${l.target}`,
      ok: r.met,
    },
  ]);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const { size } = args;
  const loadAtStart = os.loadavg().map((x) => roundTo(x, 2));
  const started = Date.now();
  const logDir = path.join(os.tmpdir(), 'massgen-bench-serve-logs');
  fs.rmSync(logDir, { recursive: true, force: true });
  fs.mkdirSync(logDir, { recursive: true });
  const { servers, reference, modelDir, modesServer } = await startAll(args, logDir).catch(async (err) => {
    throw new Error(`${err.message} (server logs in ${logDir})`);
  });
  try {
    const names = Object.keys(servers);
    const ignoreEos = (name) => name !== REFERENCE;
    for (const name of names)
      await postJson(
        `${servers[name].baseUrl}/chat/completions`,
        chatBody(0, { maxTokens: 8, sampled: false, ignoreEos: ignoreEos(name) }),
      );
    const cells = [
      ...size.concurrency.map((c) => ({ key: `c${c}`, concurrency: c, sampled: false })),
      ...(size.sampledAt ? [{ key: `c${size.sampledAt}-sampled`, concurrency: size.sampledAt, sampled: true }] : []),
    ];
    const plan = `${size.rounds} round(s) x ${cells.length} cells x ${names.length} servers, ${size.cellS} s per cell`;
    if (names.length) progress(`${plan}, ${MAX_TOKENS} tokens per request`);
    const samples = Object.fromEntries(cells.map((c) => [c.key, Object.fromEntries(names.map((n) => [n, []]))]));
    for (let round = 0; names.length && round < size.rounds; round++) {
      for (const [ci, cell] of cells.entries()) {
        for (let i = 0; i < names.length; i++) {
          const name = names[(i + round + ci) % names.length];
          const r = await runCell(servers[name], {
            ...cell,
            seconds: size.cellS,
            maxTokens: MAX_TOKENS,
            probes: size.probes,
            ignoreEos: ignoreEos(name),
          });
          samples[cell.key][name].push(r);
          progress(
            `round ${round + 1} ${cell.key.padEnd(11)} ${name.padEnd(24)} ${(r.completionTokens / r.wallS).toFixed(1).padStart(7)} tok/s  ${r.requests} req in ${r.wallS.toFixed(1)} s`,
          );
        }
      }
    }
    const results = summarize(samples);
    const [current, newer] = labels(args.engines);
    const newOverCurrent = newer ? ratios(samples, results, newer, current) : null;
    const ratioSets = {
      ...(newOverCurrent ? { [`${newer}/${current}`]: newOverCurrent } : {}),
      ...(servers[REFERENCE] && newer ? { [`${newer}/reference`]: ratios(samples, results, newer, REFERENCE) } : {}),
    };
    const goals = names.length ? targets(newOverCurrent) : [];
    if (names.length) process.stderr.write(`${table(results, ratioSets)}\n`);
    const modes = modesServer ? await runModes(args, modesServer) : null;
    if (modes) process.stderr.write(`${modesTable(modes.results, modes.ratios)}\n`);
    const caseSizes = {
      modelDir,
      logDir,
      maxBatchSize: MAX_BATCH_SIZE,
      maxTokens: MAX_TOKENS,
      rounds: size.rounds,
      seconds: size.cellS,
    };
    const adapters = size.adaptersConcurrency
      ? await runAdapters({ ...caseSizes, concurrency: size.adaptersConcurrency, maxLanes: size.adaptersMaxLanes })
      : null;
    const line = size.lineConcurrency ? await runLine({ ...caseSizes, concurrencies: size.lineConcurrency }) : null;
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
        'TTFT: the engine cells are not streamed; ttftMs is the latency of max_tokens=1 probes sent one at a time '
          + 'while the load runs (not counted in the load figures). modes.results.*.stream.ttftStreamMs is streamed.',
        `Our servers get ignore_eos: true and produce ${MAX_TOKENS} tokens per request; llama-cpp-python's server has no ignore_eos, so it stops at end of sequence: compare its completionTokensPerRequest, and msPerOutputToken (median of request latency / its completion tokens).`,
        'tokensPerS / requestsPerS: medians over rounds of completion tokens (from usage) / wall time of the cell; latencyMs percentiles over every request of every round (with few requests, p99 is close to max).',
        'Ratios: tokensPerS is the median of per-round ratios; latency ratios compare the pooled percentiles. Targets are reported, not asserted.',
        'Other work on this shared machine moves absolute figures; the engines are interleaved within each round so ratios suffer less.',
      ],
      results,
      ratios: ratioSets,
      targets: goals,
      modes: modes && { ...modes, notes: MODE_NOTES },
      adapters,
      line,
      logs: logDir,
      headline: [
        ...names.flatMap((n) => [
          { label: `${n} c1: output tokens/s`, value: fig('c1', n) ?? null, unit: 'tok/s' },
          { label: `${n} ${top}: output tokens/s`, value: fig(top, n) ?? null, unit: 'tok/s' },
        ]),
        ...goals.map((g) => ({
          label: g.name,
          value: g.value,
          unit: '×',
          ...(g.met === null ? {} : { target: g.target, ok: g.met }),
        })),
        ...(modes ? modeHeadline(modes) : []),
        ...(adapters ? adaptersHeadline(adapters) : []),
        ...(line ? lineHeadline(line) : []),
      ],
    });
  } finally {
    await Promise.all([...new Set([...Object.values(servers), modesServer].filter(Boolean))].map((s) => s.stop()));
  }
}

main().catch((err) => {
  console.error(err.stack ?? err.message);
  process.exitCode = 1;
});
