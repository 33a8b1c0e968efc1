// Closed-loop load on an OpenAI-compatible server: C workers send non-streaming chat completions back to back
// until the cell's time is up (each sends at least one; the cell ends when the last one answers), while a few
// max_tokens=1 probes measure time to first token and /proc is polled for the server's memory.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { memoryMb } from './serve-servers.mjs';

const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
const REQUEST_TIMEOUT_MS = 900_000; // a batch of 32 long completions on a busy 2-core machine can take minutes

export const QUESTIONS = [
  'What is the capital of France?', 'Why is the sky blue?', 'Name three prime numbers.', 'How do bees make honey?',
  'What is 17 times 3?', 'Give me a tip for sleeping better.', 'What does a compiler do?', 'Who wrote Hamlet?',
  'How far is the Moon from the Earth?', 'What is photosynthesis?', 'Suggest a name for a cat.', 'Why do leaves change color?',
  'What is the boiling point of water?', 'Explain what a list is in Python.', 'How many legs does a spider have?', 'What is a rainbow?',
];

/** One POST; resolves with the parsed body and its latency, rejects on a non-2xx answer or a broken connection. */
export function postJson(url, body) {
  const payload = Buffer.from(JSON.stringify(body));
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, timeout: REQUEST_TIMEOUT_MS, headers: { 'content-type': 'application/json', 'content-length': payload.length } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const latencyS = (performance.now() - start) / 1000;
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode >= 300) return reject(new Error(`${url}: HTTP ${res.statusCode}: ${text.slice(0, 300)}`));
        try { resolve({ body: JSON.parse(text), latencyS }); } catch { reject(new Error(`${url}: not JSON: ${text.slice(0, 200)}`)); }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer in ${REQUEST_TIMEOUT_MS / 1000} s`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** The request body of the n-th request of a cell; `sampled` adds temperature 1 and a per-request seed. */
export function chatBody(n, { maxTokens, sampled, ignoreEos }) {
  return {
    model: 'bench',
    messages: [{ role: 'user', content: QUESTIONS[n % QUESTIONS.length] }],
    max_tokens: maxTokens,
    ...(ignoreEos ? { ignore_eos: true } : {}),
    ...(sampled ? { temperature: 1.0, seed: 1000 + n } : { temperature: 0 }),
  };
}

/**
 * Runs one cell against `server` ({baseUrl, pid}); `ignoreEos` is false for a server without it (completion
 * tokens then come from usage, which every server reports). Returns the raw figures of the cell.
 */
export async function runCell(server, { concurrency, seconds, maxTokens, sampled, probes, ignoreEos }) {
  const url = `${server.baseUrl}/chat/completions`;
  const latencies = [];
  const tokens = []; // completion tokens of each request, in the order of latencies
  const probeLatencies = [];
  let completionTokens = 0;
  let sent = 0;
  let rssMaxMb = memoryMb(server.pid)?.rssMb ?? Number.NaN;
  const poll = setInterval(() => { rssMaxMb = Math.max(rssMaxMb, memoryMb(server.pid)?.rssMb ?? 0); }, 250);
  const start = performance.now();
  const deadline = start + seconds * 1000;
  const worker = async () => {
    do {
      const { body, latencyS } = await postJson(url, chatBody(sent++, { maxTokens, sampled, ignoreEos }));
      latencies.push(latencyS);
      tokens.push(body.usage?.completion_tokens ?? Number.NaN);
      completionTokens += tokens.at(-1);
    } while (performance.now() < deadline);
  };
  // Probes go out spread over the cell's time, one at a time, beside the load (not counted in its figures).
  const probing = (async () => {
    for (let i = 1; i <= probes; i++) {
      await new Promise((r) => setTimeout(r, Math.max(0, start + (i * seconds * 1000) / (probes + 1) - performance.now())));
      probeLatencies.push((await postJson(url, chatBody(i, { maxTokens: 1, sampled: false, ignoreEos }))).latencyS);
    }
  })();
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
    const wallS = (performance.now() - start) / 1000;
    await probing;
    const mem = memoryMb(server.pid);
    return {
      wallS, requests: latencies.length, completionTokens, latencies, tokens, probeLatencies,
      rssMaxMb: Math.max(rssMaxMb, mem?.rssMb ?? 0), rssEndMb: mem?.rssMb ?? null, hwmMb: mem?.hwmMb ?? null,
    };
  } finally {
    clearInterval(poll);
    await probing.catch(() => {});
  }
}
