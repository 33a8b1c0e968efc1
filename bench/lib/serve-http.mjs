// The HTTP client of the serve benchmark: one non-streaming POST, or one streamed chat completion read as
// server-sent events, checked against OpenAI's chunk format and timed to its first content.
import { createParser } from 'eventsource-parser';
import http from 'node:http';
import { performance } from 'node:perf_hooks';

const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
const REQUEST_TIMEOUT_MS = 900_000; // a batch of 32 long completions on a busy 2-core machine can take minutes

function post(url, body, onResponse, reject) {
  const payload = Buffer.from(JSON.stringify(body));
  const headers = { 'content-type': 'application/json', 'content-length': payload.length };
  const req = http.request(url, { method: 'POST', agent, timeout: REQUEST_TIMEOUT_MS, headers }, onResponse);
  req.on('timeout', () => req.destroy(new Error(`${url}: no answer in ${REQUEST_TIMEOUT_MS / 1000} s`)));
  req.on('error', reject);
  req.end(payload);
}

function readAll(res, done) {
  const chunks = [];
  res.on('data', (c) => chunks.push(c));
  res.on('end', () => done(Buffer.concat(chunks).toString('utf8')));
}

/** One POST; resolves with the parsed body and its latency, rejects on a non-2xx answer or a broken connection. */
export function postJson(url, body) {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    post(
      url,
      body,
      (res) => {
        res.on('error', reject);
        readAll(res, (text) => {
          const latencyS = (performance.now() - start) / 1000;
          if (res.statusCode >= 300) return reject(new Error(`${url}: HTTP ${res.statusCode}: ${text.slice(0, 300)}`));
          try {
            resolve({ body: JSON.parse(text), latencyS });
          } catch {
            reject(new Error(`${url}: not JSON: ${text.slice(0, 200)}`));
          }
        });
      },
      reject,
    );
  });
}

/**
 * One streamed chat completion (`body` gets stream: true and include_usage). Resolves with its latency, ttftS
 * (send → first chunk whose delta carries content or tool calls), the reassembled content and tool calls, the
 * usage chunk, and `problems`: each way the stream strayed from OpenAI's chunk format. Rejects on a non-2xx
 * answer, an error event or a broken connection.
 */
export function postStream(url, body) {
  const start = performance.now();
  const s = { ttftS: null, chunks: 0, contentChunks: 0, content: '', calls: [], finish: null, usage: null, id: null };
  const problems = [];
  let done = false;
  const onData = (data, fail) => {
    if (done) return problems.push('an event after [DONE]');
    if (data === '[DONE]') {
      done = true;
      return undefined;
    }
    let chunk;
    try {
      chunk = JSON.parse(data);
    } catch {
      return problems.push(`an event that is not JSON: ${data.slice(0, 80)}`);
    }
    if (chunk.error) return fail(new Error(`${url}: error event: ${JSON.stringify(chunk.error).slice(0, 300)}`));
    readChunk(s, chunk, problems);
    return undefined;
  };
  return new Promise((resolve, reject) => {
    post(
      url,
      { ...body, stream: true, stream_options: { include_usage: true } },
      (res) => {
        res.on('error', reject);
        if (res.statusCode >= 300) {
          return readAll(res, (text) => reject(new Error(`${url}: HTTP ${res.statusCode}: ${text.slice(0, 300)}`)));
        }
        const type = String(res.headers['content-type']);
        if (!type.startsWith('text/event-stream')) problems.push(`content-type ${type}`);
        const parser = createParser({ onEvent: (event) => onData(event.data, reject) });
        res.setEncoding('utf8'); // a character split across two reads is joined before the parser sees it
        res.on('data', (text) => {
          parser.feed(text);
          if (s.ttftS === null && s.contentChunks) s.ttftS = (performance.now() - start) / 1000;
        });
        res.on('end', () => {
          if (!done) problems.push('no [DONE]');
          if (s.finish === null) problems.push('no chunk with finish_reason');
          if (!s.usage) problems.push('no usage chunk (include_usage was asked)');
          resolve({ ...s, latencyS: (performance.now() - start) / 1000, problems });
        });
      },
      reject,
    );
  });
}

function readChunk(s, chunk, problems) {
  if (chunk.object !== 'chat.completion.chunk') problems.push(`object ${chunk.object}`);
  if (s.id === null) s.id = chunk.id;
  else if (chunk.id !== s.id) problems.push('the id changed within the stream');
  s.chunks++;
  if (chunk.usage) {
    if (chunk.choices?.length) problems.push('a usage chunk with choices');
    s.usage = chunk.usage;
    return;
  }
  if (s.usage) problems.push('a chunk after the usage chunk');
  for (const choice of chunk.choices ?? []) {
    const delta = choice.delta ?? {};
    if (s.chunks === 1 && delta.role !== 'assistant') problems.push('the first chunk has no role');
    if (s.finish !== null) problems.push('a chunk after finish_reason');
    if (delta.content) s.content += delta.content;
    for (const call of delta.tool_calls ?? []) {
      const into = (s.calls[call.index] ??= { id: null, name: '', arguments: '' });
      if (call.id) into.id = call.id;
      if (call.function?.name) into.name += call.function.name;
      if (call.function?.arguments) into.arguments += call.function.arguments;
    }
    if (delta.content || delta.tool_calls?.length) s.contentChunks++;
    if (choice.finish_reason) s.finish = choice.finish_reason;
  }
}
