import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChatMessage, ToolCall } from '../../src/llm/types.js';

export interface ScriptedRequest {
  model: string;
  messages: ChatMessage[];
  tools?: { function: { name: string } }[];
  logprobs?: boolean;
  return_token_ids?: boolean;
  [key: string]: unknown;
}

export type ScriptedReply =
  | { content: string; delayMs?: number; usage?: { prompt_tokens: number; completion_tokens: number } }
  | {
      toolCalls: { name: string; arguments: Record<string, unknown> }[];
      content?: string;
      delayMs?: number;
      usage?: { prompt_tokens: number; completion_tokens: number };
    }
  | { status: number; body?: unknown; headers?: Record<string, string>; delayMs?: number }
  | { hang: true }
  | { destroy: true }
  /** A stream of its own: each event's data (objects as JSON) written `gapMs` apart, then ended, cut or stalled. */
  | { events: (object | string)[]; gapMs?: number; then?: 'end' | 'cut' | 'stall' };

export type Script = (req: ScriptedRequest, index: number) => ScriptedReply | Promise<ScriptedReply>;

export interface ScriptedServer {
  baseUrl: string;
  requests: ScriptedRequest[];
  /** Requests whose client went away before the reply (cancelled calls). */
  aborted: ScriptedRequest[];
  /** Request headers, in the order of `requests`. */
  headers: http.IncomingHttpHeaders[];
  /** Runtime LoRA endpoint calls (vLLM's load_lora_adapter / unload_lora_adapter), in order, and the adapters loaded now. */
  loraCalls: { action: 'load' | 'unload'; lora_name: string; lora_path?: string }[];
  adapters: Set<string>;
  /** `/v1/embeddings` requests, in order. */
  embeddings: { model: string; input: string[] }[];
  close(): Promise<void>;
}

/**
 * A real local OpenAI-compatible server whose replies come from a script: the edge test double (on
 * `opts.port`, e.g. to restart a stopped one where its clients look for it; default a free port). Requests
 * with `stream: true` get the reply as server-sent events (OpenAI's chunk format, with a usage chunk when
 * `stream_options.include_usage` asks for it), as MassGen's chat-completions backends request them.
 */
export async function startScriptedServer(
  script: Script,
  opts: { loraDelayMs?: number; port?: number } = {},
): Promise<ScriptedServer> {
  const requests: ScriptedRequest[] = [];
  const aborted: ScriptedRequest[] = [];
  const headers: http.IncomingHttpHeaders[] = [];
  const loraCalls: ScriptedServer['loraCalls'] = [];
  const embeddings: ScriptedServer['embeddings'] = [];
  const adapters = new Set<string>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const lora = /\/(load|unload)_lora_adapter$/.exec(req.url ?? '');
      if (lora) {
        const b = JSON.parse(Buffer.concat(chunks).toString()) as { lora_name: string; lora_path?: string };
        const action = lora[1] as 'load' | 'unload';
        loraCalls.push({ action, ...b });
        if (opts.loraDelayMs) await new Promise((r) => setTimeout(r, opts.loraDelayMs));
        const known = adapters.has(b.lora_name);
        if (action === 'load' ? known : !known) {
          res.writeHead(400, { 'content-type': 'application/json' });
          return res.end(
            JSON.stringify({
              message:
                action === 'load'
                  ? `The lora adapter '${b.lora_name}' has already been loaded.`
                  : `The lora adapter '${b.lora_name}' cannot be found.`,
            }),
          );
        }
        if (action === 'load') adapters.add(b.lora_name);
        else adapters.delete(b.lora_name);
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end(`Success: LoRA adapter '${b.lora_name}' ${action}ed successfully.`);
      }
      if (/\/embeddings$/.test(req.url ?? '')) {
        // A deterministic vector per text (its sha256 bytes, centred), as an embeddings endpoint would give.
        const b = JSON.parse(Buffer.concat(chunks).toString()) as { model: string; input: string[] };
        embeddings.push(b);
        const data = b.input.map((text, index) => ({
          index,
          object: 'embedding',
          embedding: [...createHash('sha256').update(text).digest()].slice(0, 16).map((x) => x / 128 - 1),
        }));
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ object: 'list', data, model: b.model }));
      }
      let body: ScriptedRequest;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString()) as ScriptedRequest;
      } catch {
        res.writeHead(404, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ error: { message: `scripted server: no route ${req.method} ${req.url}` } }));
      }
      const index = requests.push(body) - 1;
      headers.push(req.headers);
      let gone = false;
      res.on('close', () => {
        if (!res.writableEnded) {
          gone = true;
          aborted.push(body);
        }
      });
      const reply = await script(body, index);
      if ('hang' in reply) return;
      if ('destroy' in reply) return req.socket.destroy();
      if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
      if (gone) return;
      if ('events' in reply) return writeEvents(res, reply, () => gone);
      if ('status' in reply) {
        res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
        return res.end(JSON.stringify(reply.body ?? { error: { message: `scripted ${reply.status}` } }));
      }
      if (body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        return res.end(streamed(body, completion(body, reply)));
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(completion(body, reply)));
    });
  });
  await new Promise<void>((resolve, reject) =>
    server.once('error', reject).listen(opts.port ?? 0, '127.0.0.1', resolve),
  );
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    aborted,
    headers,
    loraCalls,
    embeddings,
    adapters,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function writeEvents(
  res: http.ServerResponse,
  reply: Extract<ScriptedReply, { events: unknown }>,
  gone: () => boolean,
) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const e of reply.events) {
    if (gone()) return;
    res.write(`data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`);
    if (reply.gapMs) await new Promise((r) => setTimeout(r, reply.gapMs));
  }
  if (reply.then === 'cut') res.socket?.destroy();
  else if (reply.then !== 'stall') res.end();
}

type Completed = Exclude<ScriptedReply, { status: number } | { hang: true } | { destroy: true } | { events: unknown }>;

function completion(req: ScriptedRequest, reply: Completed) {
  const content = 'content' in reply ? (reply.content ?? null) : null;
  const toolCalls: ToolCall[] | undefined =
    'toolCalls' in reply
      ? reply.toolCalls.map((c, i) => ({
          id: `call_${i}`,
          type: 'function',
          function: { name: c.name, arguments: JSON.stringify(c.arguments) },
        }))
      : undefined;
  const words = (content ?? '').split(/(\s+)/).filter(Boolean);
  const usage =
    'usage' in reply && reply.usage ? reply.usage : { prompt_tokens: 10, completion_tokens: Math.max(1, words.length) };
  return {
    id: 'chatcmpl-scripted',
    object: 'chat.completion',
    model: req.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content, ...(toolCalls ? { tool_calls: toolCalls } : {}) },
        finish_reason: toolCalls ? 'tool_calls' : 'stop',
        ...(req.logprobs
          ? { logprobs: { content: words.map((w) => ({ token: w, logprob: -0.5, top_logprobs: [] })) } }
          : {}),
        ...(req.return_token_ids ? { token_ids: words.map((_, i) => 100 + i) } : {}),
      },
    ],
    ...(req.return_token_ids ? { prompt_token_ids: [1, 2, 3] } : {}),
    usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
  };
}

/** The same completion as server-sent events: a role chunk, the content or tool calls, the finish, then usage if asked. */
function streamed(req: ScriptedRequest, c: ReturnType<typeof completion>): string {
  const { message, finish_reason } = c.choices[0]!;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    `data: ${JSON.stringify({ id: c.id, object: 'chat.completion.chunk', model: c.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  let out = chunk({ role: 'assistant', content: '' });
  if (message.tool_calls) out += chunk({ tool_calls: message.tool_calls.map((t, index) => ({ index, ...t })) });
  if (message.content) out += chunk({ content: message.content });
  out += chunk({}, finish_reason);
  const opts = req.stream_options as { include_usage?: boolean } | undefined;
  if (opts?.include_usage)
    out += `data: ${JSON.stringify({ id: c.id, object: 'chat.completion.chunk', model: c.model, choices: [], usage: c.usage })}\n\n`;
  return `${out}data: [DONE]\n\n`;
}
