// A zero-latency OpenAI-compatible chat completions server for benchmarks. Run it as its own process
// (startStub below forks it) so its CPU time is never billed to the framework being measured.
//
// It drives a normal MassGen-style coordination for both massgen-rl and MassGen itself:
//   native tool mode (the request offers new_answer / vote tools): no answers visible yet -> new_answer;
//     answers visible -> vote for agent1 (or the first visible label when agent1 has none);
//   text mode (massgen-rl's ANSWER:/VOTE: protocol): the same actions as text lines;
//   anything else (final presentation, review, helper calls) -> plain text.
// Both JSON and SSE streaming (`stream: true`, with `stream_options.include_usage`) replies are supported.
//
// Control endpoints: GET /_stub/stats (counters, new connections, this process's CPU since the last reset),
// POST /_stub/reset.
// Env: STUB_DUMP_DIR=dir writes every request body there (debugging a new client's request shapes);
// STUB_LATENCY_MS=n answers every call n ms late (a model's time, where a benchmark compares against it).
import { fork } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ANSWERS_BLOCK = /<CURRENT ANSWERS[^>]*>([\s\S]*?)(?:<\/CURRENT ANSWERS>|<END OF CURRENT ANSWERS>)/g;
const LABEL = /<(agent\d+)(?:\.\d+)?>/g;
const TEXT_PROTOCOL = /ANSWER:\s*<your complete answer>|VOTE:\s*agentN/;

function emptyCounters() {
  return { requests: 0, streamed: 0, connections: 0, byKind: {}, toolSets: {}, models: {}, errors: 0 };
}

const LATENCY_MS = Number(process.env.STUB_LATENCY_MS ?? 0);
let counters = emptyCounters();
let cpuAtReset = process.cpuUsage();
let dumpSeq = 0;

function messageText(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === 'string' ? p : (p?.text ?? ''))).join('\n');
  return '';
}

/**
 * The last CURRENT ANSWERS block of the conversation (both frameworks' formats): null when there is none
 * (a presentation or helper call), else the answer labels it shows (empty before the first answer).
 */
function visibleLabels(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    const text = messageText(messages[i]?.content);
    const blocks = [...text.matchAll(ANSWERS_BLOCK)];
    if (blocks.length) return [...new Set([...blocks.at(-1)[1].matchAll(LABEL)].map((m) => m[1]))];
  }
  return null;
}

/** A deterministic answer for the task in the first user message (arithmetic when it parses, else a constant). */
function answerFor(messages) {
  const user = messageText(messages.find((m) => m.role === 'user')?.content);
  const m = /(-?\d+(?:\.\d+)?)\s*([+\-*x×/])\s*(-?\d+(?:\.\d+)?)/.exec(user);
  if (!m) return '42';
  const [a, op, b] = [Number(m[1]), m[2], Number(m[3])];
  const value = op === '+' ? a + b : op === '-' ? a - b : op === '/' ? a / b : a * b;
  return String(Math.round(value * 1000) / 1000);
}

function toolName(t) {
  return t?.function?.name ?? t?.name ?? '';
}

function voteTarget(tool, labels) {
  const allowed =
    tool?.function?.parameters?.properties?.agent_id?.enum ?? tool?.parameters?.properties?.agent_id?.enum;
  const pool = labels.length ? labels : Array.isArray(allowed) ? allowed : [];
  return pool.includes('agent1') ? 'agent1' : (pool[0] ?? 'agent1');
}

/** The reply for one request: { kind, content } or { kind, toolCalls }. */
export function decide(body) {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const names = tools.map(toolName);
  const shown = visibleLabels(messages);
  const labels = shown ?? [];
  const answer = answerFor(messages);
  // A coordination turn offers the workflow tools and shows the current answers; MassGen's final
  // presentation offers new_answer too but shows no answers block, so it gets plain text below.
  if (shown && (names.includes('new_answer') || names.includes('vote'))) {
    if (labels.length && names.includes('vote')) {
      const target = voteTarget(tools[names.indexOf('vote')], labels);
      return {
        kind: 'native_vote',
        toolCalls: [{ name: 'vote', arguments: { agent_id: target, reason: 'correct and complete' } }],
      };
    }
    if (names.includes('new_answer'))
      return {
        kind: 'native_answer',
        toolCalls: [{ name: 'new_answer', arguments: { content: `The answer is ${answer}.` } }],
      };
  }
  const system = messages
    .filter((m) => m.role === 'system')
    .map((m) => messageText(m.content))
    .join('\n');
  if (shown && TEXT_PROTOCOL.test(system)) {
    return labels.length
      ? {
          kind: 'text_vote',
          content: `VOTE: ${labels.includes('agent1') ? 'agent1' : labels[0]} | correct and complete`,
        }
      : { kind: 'text_answer', content: `ANSWER: The answer is ${answer}.` };
  }
  if (/Reply with one line: CONFIRM/.test(system)) return { kind: 'review', content: 'CONFIRM' };
  return {
    kind: names.length ? `plain_with_tools` : 'plain',
    content: `The answer is ${answer}.\nFinal answer: ${answer}`,
  };
}

function usageFor(body, reply) {
  let chars = 0;
  for (const m of body.messages ?? []) chars += messageText(m.content).length;
  const out = reply.content ?? JSON.stringify(reply.toolCalls);
  const prompt = Math.max(1, Math.round(chars / 4));
  const completion = Math.max(1, Math.round(out.length / 4));
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

let idSeq = 0;
function toolCallsOut(reply) {
  return reply.toolCalls?.map((c, i) => ({
    id: `call_${++idSeq}_${i}`,
    type: 'function',
    function: { name: c.name, arguments: JSON.stringify(c.arguments) },
  }));
}

function jsonCompletion(body, reply) {
  const toolCalls = toolCallsOut(reply);
  return {
    id: `chatcmpl-stub-${idSeq}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: body.model ?? 'stub',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: reply.content ?? null, ...(toolCalls ? { tool_calls: toolCalls } : {}) },
        finish_reason: toolCalls ? 'tool_calls' : 'stop',
        logprobs: null,
      },
    ],
    usage: usageFor(body, reply),
  };
}

function sseCompletion(body, reply) {
  const id = `chatcmpl-stub-${++idSeq}`;
  const created = Math.floor(Date.now() / 1000);
  const model = body.model ?? 'stub';
  const chunk = (delta, finish = null, extra = {}) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }], ...extra })}\n\n`;
  const toolCalls = toolCallsOut(reply);
  let out = chunk({ role: 'assistant', content: '' });
  if (toolCalls) out += chunk({ tool_calls: toolCalls.map((c, index) => ({ index, ...c })) });
  else out += chunk({ content: reply.content });
  out += chunk({}, toolCalls ? 'tool_calls' : 'stop');
  if (body.stream_options?.include_usage)
    out += `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: usageFor(body, reply) })}\n\n`;
  return `${out}data: [DONE]\n\n`;
}

function count(body, reply) {
  counters.requests++;
  if (body.stream) counters.streamed++;
  counters.byKind[reply.kind] = (counters.byKind[reply.kind] ?? 0) + 1;
  const model = String(body.model ?? '');
  counters.models[model] = (counters.models[model] ?? 0) + 1;
  const set = (body.tools ?? []).map(toolName).sort().join(',') || '(none)';
  counters.toolSets[set] = (counters.toolSets[set] ?? 0) + 1;
}

/** Counters since the last reset, with this process's CPU time over the same window. */
function stats() {
  const cpu = process.cpuUsage(cpuAtReset);
  return { ...counters, cpuMs: (cpu.user + cpu.system) / 1000 };
}

function handle(req, res) {
  if (req.method === 'GET' && req.url === '/_stub/stats') return sendJson(res, 200, stats());
  if (req.method === 'POST' && req.url === '/_stub/reset') {
    counters = emptyCounters();
    cpuAtReset = process.cpuUsage();
    return sendJson(res, 200, { ok: true });
  }
  if (req.method === 'GET' && /\/models\/?$/.test(req.url))
    return sendJson(res, 200, { object: 'list', data: [{ id: 'stub-model', object: 'model', owned_by: 'stub' }] });
  if (req.method !== 'POST' || !/\/chat\/completions\/?$/.test(req.url.split('?')[0])) {
    counters.errors++;
    return sendJson(res, 404, { error: { message: `stub: no route ${req.method} ${req.url}` } });
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      counters.errors++;
      return sendJson(res, 400, { error: { message: 'stub: body is not JSON' } });
    }
    if (process.env.STUB_DUMP_DIR)
      fs.writeFileSync(
        path.join(process.env.STUB_DUMP_DIR, `${String(++dumpSeq).padStart(5, '0')}.json`),
        JSON.stringify(body, null, 1),
      );
    const reply = decide(body);
    count(body, reply);
    const answer = () => {
      if (!body.stream) return sendJson(res, 200, jsonCompletion(body, reply));
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.end(sseCompletion(body, reply));
    };
    if (LATENCY_MS > 0) setTimeout(answer, LATENCY_MS);
    else answer();
  });
}

function sendJson(res, status, value) {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Child side: listen on 127.0.0.1 (an ephemeral port) and report the port to the parent. */
function serve() {
  const server = http.createServer({ keepAliveTimeout: 60_000 }, handle);
  server.on('connection', () => counters.connections++);
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    if (process.send) process.send({ port });
    else process.stdout.write(`${JSON.stringify({ port })}\n`);
  });
  process.on('disconnect', () => process.exit(0));
  process.on('SIGTERM', () => process.exit(0));
}

/**
 * Parent side: forks the stub as its own process and returns { baseUrl, stats(), reset(), stop() }.
 * opts.env: extra environment for the stub (e.g. STUB_DUMP_DIR).
 */
export async function startStub(opts = {}) {
  const child = fork(fileURLToPath(import.meta.url), ['--serve'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ...opts.env },
  });
  const port = await new Promise((resolve, reject) => {
    child.once('message', (m) => resolve(m.port));
    child.once('exit', (code) => reject(new Error(`stub exited early (${code})`)));
  });
  const origin = `http://127.0.0.1:${port}`;
  const call = async (method, p) => {
    const res = await fetch(`${origin}${p}`, { method });
    return res.json();
  };
  return {
    origin,
    baseUrl: `${origin}/v1`,
    pid: child.pid,
    stats: () => call('GET', '/_stub/stats'),
    reset: () => call('POST', '/_stub/reset'),
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes('--serve')) serve();
