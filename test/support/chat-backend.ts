import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the backend saw of one request. */
export interface SeenRequest {
  authorization: string | undefined;
  body: Record<string, unknown>;
}

export interface ChatBackend {
  baseUrl: string;
  seen: SeenRequest[];
  /** While set, a stream stops after its first content chunk until release() is called. */
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

const WORDS = ['Hel', 'lo'];
const IDS = [9906, 385];
const LOGPROBS = [-0.25, -0.5];

function logprobs(i: number) {
  return { content: [{ token: WORDS[i], logprob: LOGPROBS[i], bytes: null, top_logprobs: [] }] };
}

/** Embeddings of 4 dimensions, [i, 1, 0, 0] for input i; 3 tokens an input; any other dimensions refused. */
function embed(body: Record<string, unknown>, res: http.ServerResponse): void {
  if (body.dimensions !== undefined && body.dimensions !== 4) {
    const error = { message: 'this model has 4 dimensions', type: 'invalid_request_error', param: 'dimensions' };
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error }));
    return;
  }
  const inputs = Array.isArray(body.input) && typeof body.input[0] !== 'number' ? body.input : [body.input];
  const data = inputs.map((_, i) => {
    const v = [i, 1, 0, 0];
    const packed = Buffer.from(new Float32Array(v).buffer).toString('base64');
    const embedding = body.encoding_format === 'base64' ? packed : v;
    return { object: 'embedding', index: i, embedding };
  });
  const usage = { prompt_tokens: 3 * inputs.length, total_tokens: 3 * inputs.length };
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ object: 'list', data, model: `${String(body.model)}-served`, usage }));
}

/**
 * A scripted OpenAI-compatible chat backend (and /embeddings): replies "Hello" (two tokens) whole or streamed, with
 * logprobs and token ids (vLLM's return_token_ids) when asked, and a usage chunk when include_usage is.
 */
export async function startChatBackend(): Promise<ChatBackend> {
  const seen: SeenRequest[] = [];
  let held: { promise: Promise<void>; resolve: () => void } | undefined;
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on(
      'end',
      () =>
        void (async () => {
          const body = JSON.parse(text) as Record<string, unknown>;
          seen.push({ authorization: req.headers.authorization, body });
          if (req.url?.endsWith('/embeddings')) return embed(body, res);
          const lp = body.logprobs === true;
          const ids = body.return_token_ids === true;
          const model = `${String(body.model)}-served`;
          const usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 };
          const promptIds = ids ? { prompt_token_ids: [1, 2, 3, 4, 5] } : {};
          if (body.stream !== true) {
            const choice = {
              index: 0,
              message: { role: 'assistant', content: 'Hello' },
              finish_reason: 'stop',
              logprobs: lp ? { content: [0, 1].flatMap((i) => logprobs(i).content) } : null,
              ...(ids ? { token_ids: IDS } : {}),
            };
            const out = { id: 'cmpl-1', object: 'chat.completion', created: 1, model, choices: [choice], usage };
            Object.assign(out, promptIds);
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(JSON.stringify(out));
            return;
          }
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          const head = { id: 'cmpl-1', object: 'chat.completion.chunk', created: 1, model };
          const send = (chunk: object) => res.write(`data: ${JSON.stringify({ ...head, ...chunk })}\n\n`);
          send({
            choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
            ...promptIds,
          });
          for (let i = 0; i < WORDS.length; i++) {
            const extra = { logprobs: lp ? logprobs(i) : null, ...(ids ? { token_ids: [IDS[i]] } : {}) };
            send({ choices: [{ index: 0, delta: { content: WORDS[i] }, finish_reason: null, ...extra }] });
            if (i === 0 && held) await held.promise;
          }
          send({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
          const options = body.stream_options as { include_usage?: boolean } | undefined;
          if (options?.include_usage) send({ choices: [], usage });
          res.end('data: [DONE]\n\n');
        })(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    seen,
    hold() {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      held = { promise, resolve };
    },
    release() {
      held?.resolve();
      held = undefined;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
