import type http from 'node:http';
import type { Redactor } from '../store/redact.js';
import { readBody } from '../util/http-body.js';
import { badRequest } from './api-error.js';
import { routeArm } from './arm-route.js';
import type { Backend } from './backends.js';
import type { RouteContext } from './context.js';
import { send, type Forwarded } from './forward.js';
import type { RequestRecord } from './metrics.js';
import { relayCall } from './relay-call.js';
import { parseJsonObject } from './request.js';

/** OpenAI's limit on the inputs of one request. */
export const MAX_INPUTS = 2048;

function isTokens(v: unknown): v is number[] {
  return Array.isArray(v) && v.length > 0 && v.every((t) => Number.isInteger(t) && (t as number) >= 0);
}

/** Checks an embeddings request: a 400 ApiError naming the `param` at fault. */
export function parseEmbeddingsRequest(text: string): { body: Record<string, unknown>; model: string } {
  const body = parseJsonObject(text);
  if (typeof body.model !== 'string' || body.model === '') {
    throw badRequest('you must provide a model parameter', 'model');
  }
  const input = body.input;
  const inputs = typeof input === 'string' || isTokens(input) ? [input] : input;
  if (!Array.isArray(inputs) || inputs.length === 0) {
    throw badRequest('input must be a string, an array of strings, or an array of token arrays, not empty', 'input');
  }
  if (inputs.length > MAX_INPUTS) {
    throw badRequest(`input must have at most ${MAX_INPUTS} items, got ${inputs.length}`, 'input');
  }
  const kind = typeof inputs[0] === 'string' ? 'string' : 'tokens';
  const bad = inputs.findIndex((x) => (kind === 'string' ? typeof x !== 'string' || x === '' : !isTokens(x)));
  if (bad >= 0) {
    const what =
      kind === 'string' ? 'a non-empty string, as the first is' : 'a non-empty array of token ids (integers >= 0)';
    throw badRequest(`input[${bad}] must be ${what}`, 'input');
  }
  const format = body.encoding_format;
  if (format !== undefined && format !== null && format !== 'float' && format !== 'base64') {
    throw badRequest("encoding_format must be 'float' or 'base64'", 'encoding_format');
  }
  const dims = body.dimensions;
  if (dims !== undefined && dims !== null && !(Number.isInteger(dims) && (dims as number) >= 1)) {
    throw badRequest('dimensions must be a whole number of at least 1', 'dimensions');
  }
  if (body.user !== undefined && body.user !== null && typeof body.user !== 'string') {
    throw badRequest('user must be a string', 'user');
  }
  return { body, model: body.model };
}

/** Sends the request to the backend's /embeddings, its answer back as it came; a network failure: the next replica. */
export function forwardEmbeddings(
  backend: Backend,
  body: Record<string, unknown>,
  res: http.ServerResponse,
  signal: AbortSignal,
  redactor: Redactor,
): Promise<Forwarded> {
  const text = JSON.stringify({ ...body, model: backend.model });
  return send(backend, { replicas: backend.embeddings, body: () => text }, res, signal, redactor);
}

/** POST /v1/embeddings: routed like a chat request, captured as an `embeddings` span of the session. */
export async function embeddings(
  ctx: RouteContext,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  client: string,
  rec: RequestRecord,
): Promise<void> {
  const startedAt = Date.now();
  const t0 = performance.now();
  const { body, model } = parseEmbeddingsRequest(await readBody(req, ctx.limits.max_body_bytes));
  const { arm, backend } = await routeArm(ctx, req, body, client, await ctx.backends.get(model));
  await relayCall(
    ctx,
    req,
    res,
    { client, rec, startedAt, t0 },
    {
      backend,
      body,
      stream: false,
      kind: 'embeddings',
      arm,
      send: (signal) => forwardEmbeddings(backend, body, res, signal, ctx.redactor),
    },
  );
}
