// Closed-loop load on an OpenAI-compatible server: C workers send chat completions of one request mode
// (serve-requests.mjs) back to back until the cell's time is up (each sends at least minRequests; the cell ends
// when the last one answers), while a few max_tokens=1 probes measure time to first token and /proc is polled for the
// server's memory.
import { performance } from 'node:perf_hooks';
import { postJson } from './serve-http.mjs';
import { chatBody, sendRequest } from './serve-requests.mjs';
import { cpuSeconds, memoryMb } from './serve-servers.mjs';

/**
 * Runs one cell against `server` ({baseUrl, pid}); `ignoreEos` is false for a server without it (completion
 * tokens then come from usage, which every server reports). Returns the raw figures of the cell; `replies` holds
 * what each request recorded beyond latency and tokens (sendRequest), in the order of `latencies`.
 */
export async function runCell(server, opts) {
  const { concurrency, seconds, maxTokens, sampled, probes, ignoreEos, mode = 'plain', minRequests = 1 } = opts;
  const url = `${server.baseUrl}/chat/completions`;
  const latencies = [];
  const tokens = []; // completion tokens of each request, in the order of latencies
  const replies = [];
  const probeLatencies = [];
  let completionTokens = 0;
  let sent = 0;
  let rssMaxMb = memoryMb(server.pid)?.rssMb ?? Number.NaN;
  const poll = setInterval(() => {
    rssMaxMb = Math.max(rssMaxMb, memoryMb(server.pid)?.rssMb ?? 0);
  }, 250);
  const cpuAtStart = cpuSeconds(server.pid);
  const start = performance.now();
  const deadline = start + seconds * 1000;
  const worker = async () => {
    let mine = 0;
    do {
      mine++;
      const reply = await sendRequest(url, mode, sent++, { maxTokens, sampled, ignoreEos });
      const { latencyS, completionTokens: n, ...rest } = reply;
      latencies.push(latencyS);
      tokens.push(n);
      replies.push(rest);
      completionTokens += n;
    } while (performance.now() < deadline || mine < minRequests);
  };
  // Probes go out spread over the cell's time, one at a time, beside the load (not counted in its figures).
  const probing = (async () => {
    for (let i = 1; i <= probes; i++) {
      const at = start + (i * seconds * 1000) / (probes + 1);
      await new Promise((r) => setTimeout(r, Math.max(0, at - performance.now())));
      probeLatencies.push((await postJson(url, chatBody(i, { maxTokens: 1, sampled: false, ignoreEos }))).latencyS);
    }
  })();
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
    const wallS = (performance.now() - start) / 1000;
    await probing;
    const mem = memoryMb(server.pid);
    const cpuS = cpuAtStart === null ? null : (cpuSeconds(server.pid) ?? Number.NaN) - cpuAtStart;
    return {
      wallS,
      cpuS,
      requests: latencies.length,
      completionTokens,
      latencies,
      tokens,
      replies,
      probeLatencies,
      rssMaxMb: Math.max(rssMaxMb, mem?.rssMb ?? 0),
      rssEndMb: mem?.rssMb ?? null,
      hwmMb: mem?.hwmMb ?? null,
    };
  } finally {
    clearInterval(poll);
    await probing.catch(() => {});
  }
}
