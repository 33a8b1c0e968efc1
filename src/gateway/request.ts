import { badRequest } from './api-error.js';

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

/** Deeper JSON is refused (as `serve` does): nothing OpenAI's API takes nests near it. */
export const MAX_JSON_DEPTH = 100;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function absent(v: unknown): boolean {
  return v === undefined || v === null;
}

/** A request body as a JSON object, its depth and text checked (every route's first step). */
export function parseJsonObject(text: string): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw badRequest('the request body is not valid JSON', null, 'invalid_json');
  }
  if (!isObject(body)) throw badRequest('the request body must be a JSON object', null);
  checkTree(body);
  return body;
}

/** Parses and checks a chat request body: a 400 ApiError naming the `param` at fault. */
export function parseChatRequest(text: string): ClientRequest {
  const body = parseJsonObject(text);
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
  if (!absent(body.user) && typeof body.user !== 'string') throw badRequest('user must be a string', 'user');
  const options = body.stream_options;
  if (!absent(options) && !isObject(options)) throw badRequest('stream_options must be an object', 'stream_options');
  const stream = body.stream === true;
  return {
    body,
    model: body.model,
    stream,
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

/**
 * Walks the parsed body without recursion: nesting past MAX_JSON_DEPTH (the relayed body is serialized
 * again, recursively) and lone UTF-16 surrogates (valid JSON escapes, but no text to tokenize or store)
 * are refused, naming the top-level field.
 */
function checkTree(body: Record<string, unknown>): void {
  const stack: [unknown, number, string | null][] = [[body, 1, null]];
  while (stack.length) {
    const [value, depth, field] = stack.pop()!;
    if (typeof value === 'string') {
      if (!value.isWellFormed()) throw badRequest(`${field ?? 'the body'} holds a lone UTF-16 surrogate`, field);
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (depth > MAX_JSON_DEPTH)
      throw badRequest(`the request body nests JSON more than ${MAX_JSON_DEPTH} levels deep`, field);
    if (Array.isArray(value)) {
      for (const item of value) stack.push([item, depth + 1, field]);
      continue;
    }
    for (const [key, item] of Object.entries(value)) {
      const name = field ?? key;
      if (!key.isWellFormed()) throw badRequest(`${name} holds a lone UTF-16 surrogate`, name);
      stack.push([item, depth + 1, name]);
    }
  }
}
