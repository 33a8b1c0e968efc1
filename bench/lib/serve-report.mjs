// Figures of the serve benchmark: per engine (or request mode) and cell (concurrency, greedy or sampled) the
// medians over rounds, latency percentiles over every request of every round, ratios new/current and between
// request modes, the targets, and the tables.
import { median, pairedRatio, percentile, roundTo } from './stats.mjs';

export const TARGETS = { tokensRatioC16: 5, tokensRatioC1: 3, streamTolerance: 0.05, toolSlowdown: 1.3 };

/** samples[cell][engine or mode] = one runCell() result per round (same order for every engine or mode). */
export function summarize(samples) {
  return Object.fromEntries(
    Object.entries(samples).map(([cell, byEngine]) => [
      cell,
      Object.fromEntries(Object.entries(byEngine).map(([engine, rounds]) => [engine, summarizeCell(rounds)])),
    ]),
  );
}

function summarizeCell(rounds) {
  const latencies = rounds.flatMap((r) => r.latencies);
  const probes = rounds.flatMap((r) => r.probeLatencies);
  const requests = rounds.reduce((n, r) => n + r.requests, 0);
  const ms = (s) => roundTo(s * 1000, 1);
  return {
    tokensPerS: roundTo(median(rounds.map((r) => r.completionTokens / r.wallS)), 2),
    requestsPerS: roundTo(median(rounds.map((r) => r.requests / r.wallS)), 3),
    latencyMs: {
      p50: ms(percentile(latencies, 0.5)),
      p99: ms(percentile(latencies, 0.99)),
      max: ms(Math.max(...latencies)),
      n: latencies.length,
    },
    ttftMs: { median: ms(median(probes)), max: ms(Math.max(...probes)), n: probes.length },
    // comparable across servers whose completions differ in length (llama-cpp-python stops at end of sequence)
    msPerOutputToken: ms(median(rounds.flatMap((r) => r.latencies.map((l, i) => l / r.tokens[i])))),
    completionTokensPerRequest: roundTo(rounds.reduce((n, r) => n + r.completionTokens, 0) / requests, 1),
    // server CPU time per completion token: less moved by other work on the machine than wall time
    serverCpuMsPerToken: roundTo(median(rounds.map((r) => (r.cpuS * 1000) / r.completionTokens)), 2),
    memoryMb: {
      peakHwm: roundTo(Math.max(...rounds.map((r) => r.hwmMb)), 1),
      peakRssInCell: roundTo(Math.max(...rounds.map((r) => r.rssMaxMb)), 1),
      rssAtEnd: roundTo(median(rounds.map((r) => r.rssEndMb)), 1),
    },
    rounds: rounds.map((r) => ({
      wallS: roundTo(r.wallS, 2),
      requests: r.requests,
      completionTokens: r.completionTokens,
      tokensPerS: roundTo(r.completionTokens / r.wallS, 2),
    })),
    ...replyFigures(rounds.flatMap((r) => r.replies ?? [])),
  };
}

function countBy(values) {
  const counts = {};
  for (const v of values) counts[v] = (counts[v] ?? 0) + 1;
  return counts;
}

/** What the request modes record beyond latency: prompt tokens, finish reasons, streamed TTFT, tool calls. */
function replyFigures(replies) {
  if (!replies.length) return {};
  const ms = (s) => roundTo(s * 1000, 1);
  const out = {
    promptTokensPerRequest: roundTo(median(replies.map((r) => r.promptTokens)), 1),
    finishReasons: countBy(replies.map((r) => r.finish ?? 'none')),
  };
  const streamed = replies.filter((r) => 'ttftS' in r);
  if (streamed.length) {
    const ttft = streamed.map((r) => r.ttftS).filter((t) => t !== null);
    out.ttftStreamMs = {
      p50: ms(percentile(ttft, 0.5)),
      p99: ms(percentile(ttft, 0.99)),
      max: ms(Math.max(...ttft)),
      n: ttft.length,
      withoutContent: streamed.length - ttft.length,
    };
    out.chunksPerRequest = roundTo(median(streamed.map((r) => r.chunks)), 1);
    out.contentChunksPerRequest = roundTo(median(streamed.map((r) => r.contentChunks)), 1);
    out.streamProblems = {
      requests: streamed.filter((r) => r.problems.length).length,
      kinds: countBy(streamed.flatMap((r) => r.problems)),
    };
  }
  const called = replies.filter((r) => r.call);
  if (called.length) {
    const whole = called.filter((r) => r.finish !== 'length');
    const share = (rs) => (rs.length ? roundTo(rs.filter((r) => r.call.valid).length / rs.length, 3) : null);
    out.calls = {
      requests: called.length,
      valid: called.filter((r) => r.call.valid).length,
      validShare: share(called),
      cutByMaxTokens: called.length - whole.length,
      validShareNotCut: share(whole),
      byTool: countBy(called.filter((r) => r.call.valid).map((r) => r.call.name)),
      invalid: countBy(
        called
          .filter((r) => !r.call.valid)
          .map((r) => `${r.call.why}${r.finish === 'length' ? ' (cut by max_tokens)' : ''}`),
      ),
    };
  }
  return out;
}

/** newer/older per cell: tokens/s as the median of per-round ratios, latency percentiles over the pooled requests. */
export function ratios(samples, results, newer, older) {
  return Object.fromEntries(
    Object.keys(samples)
      .filter((cell) => samples[cell][newer] && samples[cell][older])
      .map((cell) => {
        const [a, b] = [results[cell][newer], results[cell][older]];
        const tps = (rounds) => rounds.map((r) => r.completionTokens / r.wallS);
        return [
          cell,
          {
            tokensPerS: roundTo(pairedRatio(tps(samples[cell][newer]), tps(samples[cell][older])), 2),
            latencyP50: roundTo(a.latencyMs.p50 / b.latencyMs.p50, 3),
            latencyP99: roundTo(a.latencyMs.p99 / b.latencyMs.p99, 3),
            ttftMedian: roundTo(a.ttftMs.median / b.ttftMs.median, 3),
          },
        ];
      }),
  );
}

/** The three targets, reported (never asserted); a cell this run did not measure gives met: null. */
export function targets(newOverCurrent) {
  const at = (cell) => newOverCurrent?.[cell]?.tokensPerS ?? null;
  const p99 = Object.entries(newOverCurrent ?? {})
    .filter(([cell]) => !cell.includes('sampled'))
    .map(([, r]) => r.latencyP99);
  const worstP99 = p99.length ? Math.max(...p99) : null;
  const line = (name, target, value, met) => ({ name, target, value, met: value === null ? null : met(value) });
  return [
    line(
      'tokens/s new/current at concurrency 16',
      `>= ${TARGETS.tokensRatioC16}`,
      at('c16'),
      (v) => v >= TARGETS.tokensRatioC16,
    ),
    line(
      'tokens/s new/current at concurrency 1',
      `>= ${TARGETS.tokensRatioC1}`,
      at('c1'),
      (v) => v >= TARGETS.tokensRatioC1,
    ),
    line('p99 latency new/current, worst greedy cell', '<= 1', worstP99, (v) => v <= 1),
  ];
}

/** a/b of tokens/s in one cell: the median of per-round ratios (the modes ran interleaved in each round). */
function tokensRatio(samples, cell, a, b) {
  const tps = (rounds) => rounds.map((r) => r.completionTokens / r.wallS);
  const [x, y] = [samples[cell]?.[a], samples[cell]?.[b]];
  return x && y ? roundTo(pairedRatio(tps(x), tps(y)), 3) : null;
}

/**
 * Per cell of the request modes: streamOverPlain (tokens/s stream/plain; latency and probe ratios as for engines),
 * toolSlowdown (tokens/s plain/tools: above 1, tool calls are slower) and grammarSlowdown (tokens/s
 * tools-text/tools: the same prompt, so what is left is the grammar and the call parsing).
 */
export function modeRatios(samples, results) {
  return Object.fromEntries(
    Object.keys(samples).map((cell) => {
      const r = results[cell];
      const per = (a, b, key) => (r[a] && r[b] ? roundTo(r[a][key] / r[b][key], 3) : null);
      return [
        cell,
        {
          streamOverPlain:
            r.stream && r.plain
              ? {
                  ...ratios({ [cell]: samples[cell] }, results, 'stream', 'plain')[cell],
                  serverCpuMsPerToken: per('stream', 'plain', 'serverCpuMsPerToken'),
                }
              : null,
          toolSlowdown:
            r.tools && r.plain
              ? {
                  tokensPerS: tokensRatio(samples, cell, 'plain', 'tools'),
                  msPerOutputToken: per('tools', 'plain', 'msPerOutputToken'),
                  serverCpuMsPerToken: per('tools', 'plain', 'serverCpuMsPerToken'),
                  completionTokensPerRequest: {
                    plain: r.plain.completionTokensPerRequest,
                    tools: r.tools.completionTokensPerRequest,
                  },
                }
              : null,
          grammarSlowdown:
            r.tools && r['tools-text']
              ? {
                  tokensPerS: tokensRatio(samples, cell, 'tools-text', 'tools'),
                  msPerOutputToken: per('tools', 'tools-text', 'msPerOutputToken'),
                  serverCpuMsPerToken: per('tools', 'tools-text', 'serverCpuMsPerToken'),
                }
              : null,
        },
      ];
    }),
  );
}

/** The request modes' targets, reported (never asserted); a cell or mode this run did not measure gives met: null. */
export function modeTargets(byCell) {
  const tol = TARGETS.streamTolerance;
  const line = (name, target, value, met) => ({ name, target, value, met: value === null ? null : met(value) });
  return [1, 16].flatMap((c) => [
    line(
      `tokens/s stream/plain at concurrency ${c}`,
      `${1 - tol}..${1 + tol}`,
      byCell[`c${c}`]?.streamOverPlain?.tokensPerS ?? null,
      (v) => Math.abs(v - 1) <= tol + 1e-9,
    ),
    line(
      `tool-call slowdown, tok/s plain/tools, concurrency ${c}`,
      `<= ${TARGETS.toolSlowdown}`,
      byCell[`c${c}`]?.toolSlowdown?.tokensPerS ?? null,
      (v) => v <= TARGETS.toolSlowdown,
    ),
  ]);
}

/** The request modes' table printed to stderr, ratios under each cell. */
export function modesTable(results, byCell) {
  const head = ['tok/s', 'cpu/tok', 'p50 ms', 'p99 ms', 'TTFTp50', 'TTFTp99', 'probe', 'tok/req', 'prompt', 'valid']
    .map((h) => h.padStart(8))
    .join('');
  const lines = [
    `  ${'cell'.padEnd(6)} ${'mode'.padEnd(11)}${head}`,
    '  (cpu/tok: server CPU ms per completion token; TTFT: streamed, send to first content chunk; probe: max_tokens=1 '
      + 'requests beside the load)',
  ];
  for (const [cell, byMode] of Object.entries(results)) {
    for (const [mode, r] of Object.entries(byMode)) {
      const cols = [
        r.tokensPerS,
        r.serverCpuMsPerToken,
        r.latencyMs.p50,
        r.latencyMs.p99,
        r.ttftStreamMs?.p50 ?? null,
        r.ttftStreamMs?.p99 ?? null,
        r.ttftMs.median,
        r.completionTokensPerRequest,
        r.promptTokensPerRequest ?? null,
      ];
      const valid = r.calls ? `${Math.round(r.calls.validShare * 100)} %` : '-';
      lines.push(`  ${cell.padEnd(6)} ${mode.padEnd(11)}${cols.map((v) => fmt(v, 8)).join('')}${valid.padStart(8)}`);
    }
    const q = byCell[cell];
    const parts = [
      q.streamOverPlain && `stream/plain ${fmt(q.streamOverPlain.tokensPerS, 0)}× tok/s`,
      q.toolSlowdown && `tool-call slowdown ${fmt(q.toolSlowdown.tokensPerS, 0)}× tok/s`,
      q.grammarSlowdown && `grammar alone (tools-text/tools) ${fmt(q.grammarSlowdown.tokensPerS, 0)}×`,
    ].filter(Boolean);
    if (parts.length) lines.push(`  ${cell.padEnd(6)} ${'ratios'.padEnd(11)}${parts.join('   ')}`);
  }
  return lines.join('\n');
}

/** The table printed to stderr. */
export function table(results, ratioSets) {
  const lines = [
    `  ${'cell'.padEnd(11)} ${'engine'.padEnd(24)} ${'tok/s'.padStart(8)} ${'req/s'.padStart(7)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'TTFT ms'.padStart(8)} ${'HWM MB'.padStart(7)} ${'tok/req'.padStart(7)} ${'ms/tok'.padStart(7)}`,
  ];
  for (const [cell, byEngine] of Object.entries(results)) {
    for (const [engine, r] of Object.entries(byEngine)) {
      lines.push(
        `  ${cell.padEnd(11)} ${engine.padEnd(24)} ${fmt(r.tokensPerS, 8)} ${fmt(r.requestsPerS, 7)} ${fmt(r.latencyMs.p50, 8)} ${fmt(r.latencyMs.p99, 8)} ${fmt(r.ttftMs.median, 8)} ${fmt(r.memoryMb.peakHwm, 7)} ${fmt(r.completionTokensPerRequest, 7)} ${fmt(r.msPerOutputToken, 7)}`,
      );
    }
  }
  for (const [label, set] of Object.entries(ratioSets)) {
    for (const [cell, r] of Object.entries(set)) {
      lines.push(
        `  ${cell.padEnd(11)} ${label.padEnd(24)} ${fmt(r.tokensPerS, 7)}× tok/s   p50 ${fmt(r.latencyP50, 6)}×  p99 ${fmt(r.latencyP99, 6)}×  TTFT ${fmt(r.ttftMedian, 6)}×`,
      );
    }
  }
  return lines.join('\n');
}

function fmt(value, width) {
  const text =
    value === null || Number.isNaN(value) ? '-' : value >= 100 ? String(Math.round(value)) : String(roundTo(value, 2));
  return text.padStart(width);
}
