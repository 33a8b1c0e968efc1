import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The backend behind the gateway in its fuzz run: OpenAI-shaped, checks a few fields as OpenAI does (a 400
 * naming `param`), and misbehaves on request. `fuzz_backend` in the body picks how:
 *   echo-key   a 401 whose body repeats the Authorization header it got (the key must not reach the client)
 *   error-500  an error status
 *   cut        a stream that stops halfway without [DONE]
 *   long       a stream of `fuzz_chunks` chunks (a slow reader must hold it back, not the gateway's memory)
 *   slow       a stream of `fuzz_chunks` chunks, one each 20 ms
 *   hang       no answer until the connection closes
 */
export interface FuzzBackend {
  baseUrl: string;
  /** Streams being written now, chunks written in all, the most bytes one stream had queued in node at once. */
  stats: { streaming: number; maxQueued: number; requests: number; sent: number };
  close(): Promise<void>;
}

const CHECKS: [string, (v: unknown) => boolean][] = [
  ['max_tokens', (v) => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 4096],
  ['n', (v) => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 8],
  ['temperature', (v) => typeof v === 'number' && v >= 0 && v <= 2],
  ['top_p', (v) => typeof v === 'number' && v > 0 && v <= 1],
  ['top_logprobs', (v) => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 20],
  [
    'stop',
    (v) => typeof v === 'string' || (Array.isArray(v) && v.length <= 4 && v.every((s) => typeof s === 'string')),
  ],
  ['seed', (v) => Number.isInteger(v)],
];

function refuse(res: http.ServerResponse, status: number, message: string, param: string | null): void {
  const body = JSON.stringify({ error: { message, type: 'invalid_request_error', param, code: null } });
  res.writeHead(status, { 'content-type': 'application/json' }).end(body);
}

export async function startFuzzBackend(): Promise<FuzzBackend> {
  const stats = { streaming: 0, maxQueued: 0, requests: 0, sent: 0 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      stats.requests++;
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        return refuse(res, 400, 'the gateway sent a body that is not JSON', null);
      }
      const mode = body.fuzz_backend;
      if (mode === 'echo-key') return refuse(res, 401, `bad key: ${req.headers.authorization}`, null);
      if (mode === 'error-500') return refuse(res, 500, 'the backend failed', null);
      if (mode === 'hang') return;
      for (const [field, ok] of CHECKS) {
        if (body[field] !== undefined && body[field] !== null && !ok(body[field])) {
          return refuse(res, 400, `invalid ${field}`, field);
        }
      }
      const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };
      const model = String(body.model);
      if (body.stream !== true) {
        const message = { role: 'assistant', content: 'ok' };
        const out = {
          id: 'c',
          object: 'chat.completion',
          created: 1,
          model,
          usage,
          choices: [{ index: 0, message, finish_reason: 'stop', logprobs: null }],
        };
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const total = mode === 'long' || mode === 'slow' ? Math.min(Number(body.fuzz_chunks) || 2000, 20_000) : 2;
      const event = (delta: object, finish: string | null) =>
        `data: ${JSON.stringify({
          id: 'c',
          object: 'chat.completion.chunk',
          created: 1,
          model,
          choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
        })}\n\n`;
      stats.streaming++;
      res.on('close', () => stats.streaming--);
      let i = 0;
      const pump = () => {
        while (i < total && !res.destroyed) {
          if (mode === 'cut' && i === 1) return void res.socket?.destroy();
          const ok = res.write(event({ content: `word${i} `.repeat(mode === 'long' ? 120 : 8) }, null));
          i++;
          stats.sent++;
          stats.maxQueued = Math.max(stats.maxQueued, res.writableLength);
          if (!ok) return void res.once('drain', pump);
          if (mode === 'slow') return void setTimeout(pump, 20);
        }
        if (res.destroyed) return;
        res.write(event({}, 'stop'));
        res.end(
          `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model, choices: [], usage })}`
            + '\n\ndata: [DONE]\n\n',
        );
      };
      pump();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    stats,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
