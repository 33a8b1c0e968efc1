import { ApiError, badRequest } from './api-error.js';

/** A chat-completions request as the client sent it, checked as far as the gateway relies on it. */
export interface ClientRequest {
  body: Record<string, unknown>;
  model: string;
  stream: boolean;
  /** What the client asked for itself: the rest is removed from what it gets back. */
  wants: { logprobs: boolean; tokenIds: boolean; usage: boolean };
}

/** What the gateway asks of a backend on top of the client's request (dropped for a backend that refuses one). */
export interface Extensions {
  logprobs: boolean;
  tokenIds: boolean;
}

export const MAX_BODY_BYTES = 32 * 1024 * 1024;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function absent(v: unknown): boolean {
  return v === undefined || v === null;
}

/** Parses and checks a request body: a 400 ApiError naming the `param` at fault. */
export function parseChatRequest(text: string): ClientRequest {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw badRequest('the request body is not valid JSON', null, 'invalid_json');
  }
  if (!isObject(body)) throw badRequest('the request body must be a JSON object', null);
  if (typeof body.model !== 'string' || body.model === '') {
    throw badRequest('you must provide a model parameter', 'model');
  }
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) {
    throw badRequest('messages must be a non-empty array', 'messages');
  }
  const bad = messages.findIndex((m) => !isObject(m) || typeof m.role !== 'string');
  if (bad >= 0) throw badRequest(`messages[${bad}] must be an object with a role`, `messages[${bad}]`);
  for (const key of ['stream', 'logprobs', 'return_token_ids'] as const) {
    if (!absent(body[key]) && typeof body[key] !== 'boolean') throw badRequest(`${key} must be a boolean`, key);
  }
  if (!absent(body.tools) && !Array.isArray(body.tools)) throw badRequest('tools must be an array', 'tools');
  const options = body.stream_options;
  if (!absent(options) && !isObject(options)) throw badRequest('stream_options must be an object', 'stream_options');
  const stream = body.stream === true;
  return {
    body, model: body.model, stream,
    wants: {
      logprobs: body.logprobs === true,
      tokenIds: body.return_token_ids === true,
      usage: stream && isObject(options) && options.include_usage === true,
    },
  };
}

/** The body sent to the backend: its own model name, logprobs and token ids asked for, a stream's usage too. */
export function backendBody(req: ClientRequest, backendModel: string, ext: Extensions): string {
  const out: Record<string, unknown> = { ...req.body, model: backendModel };
  if (ext.logprobs) out.logprobs = true;
  if (ext.tokenIds) out.return_token_ids = true;
  if (req.stream) out.stream_options = { ...(req.body.stream_options as object | undefined), include_usage: true };
  return JSON.stringify(out);
}

/** Reads a request body up to MAX_BODY_BYTES (a 413 ApiError beyond). */
export function readBody(req: import('node:http').IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new ApiError(413, `the request body is over ${MAX_BODY_BYTES} bytes`, null, 'request_too_large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
