// Figures of the serve benchmark: per engine and cell (concurrency, greedy or sampled) the medians over rounds,
// latency percentiles over every request of every round, ratios new/current, the targets, and a table.
import { median, pairedRatio, percentile, roundTo } from './stats.mjs';

export const TARGETS = { tokensRatioC16: 5, tokensRatioC1: 3 };

/** samples[cell][engine] = one runCell() result per round (same order for every engine). */
export function summarize(samples) {
  return Object.fromEntries(Object.entries(samples).map(([cell, byEngine]) => [cell, Object.fromEntries(
    Object.entries(byEngine).map(([engine, rounds]) => [engine, summarizeCell(rounds)]),
  )]));
}

function summarizeCell(rounds) {
  const latencies = rounds.flatMap((r) => r.latencies);
  const probes = rounds.flatMap((r) => r.probeLatencies);
  const requests = rounds.reduce((n, r) => n + r.requests, 0);
  const ms = (s) => roundTo(s * 1000, 1);
  return {
    tokensPerS: roundTo(median(rounds.map((r) => r.completionTokens / r.wallS)), 2),
    requestsPerS: roundTo(median(rounds.map((r) => r.requests / r.wallS)), 3),
    latencyMs: { p50: ms(percentile(latencies, 0.5)), p99: ms(percentile(latencies, 0.99)), max: ms(Math.max(...latencies)), n: latencies.length },
    ttftMs: { median: ms(median(probes)), max: ms(Math.max(...probes)), n: probes.length },
    // comparable across servers whose completions differ in length (llama-cpp-python stops at end of sequence)
    msPerOutputToken: ms(median(rounds.flatMap((r) => r.latencies.map((l, i) => l / r.tokens[i])))),
    completionTokensPerRequest: roundTo(rounds.reduce((n, r) => n + r.completionTokens, 0) / requests, 1),
    memoryMb: {
      peakHwm: roundTo(Math.max(...rounds.map((r) => r.hwmMb)), 1),
      peakRssInCell: roundTo(Math.max(...rounds.map((r) => r.rssMaxMb)), 1),
      rssAtEnd: roundTo(median(rounds.map((r) => r.rssEndMb)), 1),
    },
    rounds: rounds.map((r) => ({ wallS: roundTo(r.wallS, 2), requests: r.requests, completionTokens: r.completionTokens, tokensPerS: roundTo(r.completionTokens / r.wallS, 2) })),
  };
}

/** newer/older per cell: tokens/s as the median of per-round ratios, latency percentiles over the pooled requests. */
export function ratios(samples, results, newer, older) {
  return Object.fromEntries(Object.keys(samples).filter((cell) => samples[cell][newer] && samples[cell][older]).map((cell) => {
    const [a, b] = [results[cell][newer], results[cell][older]];
    const tps = (rounds) => rounds.map((r) => r.completionTokens / r.wallS);
    return [cell, {
      tokensPerS: roundTo(pairedRatio(tps(samples[cell][newer]), tps(samples[cell][older])), 2),
      latencyP50: roundTo(a.latencyMs.p50 / b.latencyMs.p50, 3),
      latencyP99: roundTo(a.latencyMs.p99 / b.latencyMs.p99, 3),
      ttftMedian: roundTo(a.ttftMs.median / b.ttftMs.median, 3),
    }];
  }));
}

/** The three targets, reported (never asserted); a cell this run did not measure gives met: null. */
export function targets(newOverCurrent) {
  const at = (cell) => newOverCurrent?.[cell]?.tokensPerS ?? null;
  const p99 = Object.entries(newOverCurrent ?? {}).filter(([cell]) => !cell.includes('sampled')).map(([, r]) => r.latencyP99);
  const worstP99 = p99.length ? Math.max(...p99) : null;
  const line = (name, target, value, met) => ({ name, target, value, met: value === null ? null : met(value) });
  return [
    line('tokens/s new/current at concurrency 16', `>= ${TARGETS.tokensRatioC16}`, at('c16'), (v) => v >= TARGETS.tokensRatioC16),
    line('tokens/s new/current at concurrency 1', `>= ${TARGETS.tokensRatioC1}`, at('c1'), (v) => v >= TARGETS.tokensRatioC1),
    line('p99 latency new/current, worst greedy cell', '<= 1', worstP99, (v) => v <= 1),
  ];
}

/** The table printed to stderr. */
export function table(results, ratioSets) {
  const lines = [`  ${'cell'.padEnd(11)} ${'engine'.padEnd(24)} ${'tok/s'.padStart(8)} ${'req/s'.padStart(7)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'TTFT ms'.padStart(8)} ${'HWM MB'.padStart(7)} ${'tok/req'.padStart(7)} ${'ms/tok'.padStart(7)}`];
  for (const [cell, byEngine] of Object.entries(results)) {
    for (const [engine, r] of Object.entries(byEngine)) {
      lines.push(`  ${cell.padEnd(11)} ${engine.padEnd(24)} ${fmt(r.tokensPerS, 8)} ${fmt(r.requestsPerS, 7)} ${fmt(r.latencyMs.p50, 8)} ${fmt(r.latencyMs.p99, 8)} ${fmt(r.ttftMs.median, 8)} ${fmt(r.memoryMb.peakHwm, 7)} ${fmt(r.completionTokensPerRequest, 7)} ${fmt(r.msPerOutputToken, 7)}`);
    }
  }
  for (const [label, set] of Object.entries(ratioSets)) {
    for (const [cell, r] of Object.entries(set)) {
      lines.push(`  ${cell.padEnd(11)} ${label.padEnd(24)} ${fmt(r.tokensPerS, 7)}× tok/s   p50 ${fmt(r.latencyP50, 6)}×  p99 ${fmt(r.latencyP99, 6)}×  TTFT ${fmt(r.ttftMedian, 6)}×`);
    }
  }
  return lines.join('\n');
}

function fmt(value, width) {
  const text = value === null || Number.isNaN(value) ? '-' : value >= 100 ? String(Math.round(value)) : String(roundTo(value, 2));
  return text.padStart(width);
}
