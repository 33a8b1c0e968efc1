import type http from 'node:http';
import { errorMessage } from '../errors.js';
import { HttpTimeoutError, postJson, type HttpResponse, type JsonEndpoint } from '../llm/http.js';
import type { Replicas } from '../llm/replicas.js';
import type { ChatResult } from '../llm/types.js';
import type { Redactor } from '../store/redact.js';
import { ApiError, sendJson } from './api-error.js';
import { dropRefused, type Backend } from './backends.js';
import { backendBody, type ClientRequest } from './request.js';
import { StreamRelay } from './stream-relay.js';
import { stripBody } from './strip.js';

/** What came of one forwarded call, for its span: the status, the completion (a body to parse later, or assembled). */
export interface Forwarded {
  status: number;
  attempts: number;
  /** A whole completion's body as the backend sent it (parsed off the request path). */
  body?: string;
  /** A stream, assembled. */
  result?: ChatResult;
  error?: string;
  cancelled?: boolean;
}

const RETRIABLE_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN', 'ENOTFOUND']);

/** What one kind of call sends and how it reads the answer: chat completions, or embeddings. */
export interface Route {
  replicas: Replicas<JsonEndpoint>;
  /** The body for the backend, made again for each attempt (what the backend refused is dropped between). */
  body(): string;
  /** A stream's relay to the client, made for each attempt. */
  relay?(): StreamRelay;
  /** A 400 that asks the same request again (an extension the gateway added and the backend refused). */
  again?(body: string): boolean;
  /** A whole success as the client gets it. */
  ok?(body: string): string;
}

/**
 * Sends the client's request to the backend and its answer back: a stream relayed as it arrives, a
 * whole completion stripped of what the client did not ask for, an error status passed on as it came.
 * A network failure before anything reached the client goes to the next replica (max_retries).
 */
export function forward(
  backend: Backend,
  req: ClientRequest,
  res: http.ServerResponse,
  signal: AbortSignal,
  redactor: Redactor,
): Promise<Forwarded> {
  const route: Route = {
    replicas: backend.replicas,
    body: () => backendBody(req, backend.model, backend.caps),
    relay: req.stream ? () => new StreamRelay(res, req.wants) : undefined,
    again: (body) => dropRefused(body, backend.caps, req.wants),
    ok: (body) => stripBody(body, req.wants),
  };
  return send(backend, route, res, signal, redactor);
}

/** One call to the backend's replicas by `route`, retried on the next replica after a network failure. */
export async function send(
  backend: Backend,
  route: Route,
  res: http.ServerResponse,
  signal: AbortSignal,
  redactor: Redactor,
): Promise<Forwarded> {
  const { replicas } = route;
  for (let attempts = 1; ; attempts++) {
    const pick = replicas.acquire();
    if ('waitMs' in pick) {
      const message = `every backend of ${backend.name} is down; try again in ${Math.ceil(pick.waitMs)} ms`;
      throw new ApiError(503, message, null, 'backend_down');
    }
    const { lease } = pick;
    const relay = route.relay?.();
    let r: HttpResponse;
    try {
      r = await postJson(lease.item, route.body(), backend.timeoutMs, signal, relay?.sink);
    } catch (err) {
      if (signal.aborted) {
        replicas.released(lease);
        relay?.end();
        return { status: 499, attempts, cancelled: true, error: 'the client closed the connection' };
      }
      const code = (err as NodeJS.ErrnoException).code ?? '';
      const retriable = err instanceof HttpTimeoutError || RETRIABLE_CODES.has(code);
      if (retriable) replicas.failed(lease);
      else replicas.released(lease);
      const message = redactor.scrub(`backend ${lease.item.url.origin}: ${errorMessage(err)}`);
      if (relay?.started) {
        relay.end();
        return { status: 502, attempts, error: message };
      }
      if (retriable && attempts <= backend.maxRetries) continue;
      throw new ApiError(err instanceof HttpTimeoutError ? 504 : 502, message, null, 'backend_error');
    }
    if (relay?.started) {
      replicas.succeeded(lease);
      relay.end();
      try {
        const result = relay.completion.result({ latencyMs: 0, attempts, model: backend.model });
        return { status: 200, attempts, result };
      } catch (err) {
        return { status: 502, attempts, error: errorMessage(err) };
      }
    }
    if (r.status === 400 && route.again?.(r.body)) {
      replicas.succeeded(lease);
      attempts--;
      continue;
    }
    if (r.status === 429 || r.status >= 500) replicas.failed(lease);
    else replicas.succeeded(lease);
    return passOn(res, r, lease.item.url.origin, redactor, attempts, route.ok);
  }
}

/**
 * A backend's whole answer to the client: a success as `ok` makes it, an error through the redactor (a
 * backend may echo the key it was sent), a refusal of the gateway's own key as the gateway's 502.
 */
export function passOn(
  res: http.ServerResponse,
  r: HttpResponse,
  origin: string,
  redactor: Redactor,
  attempts: number,
  ok: (body: string) => string = (body) => body,
): Forwarded {
  if (r.status === 401 || r.status === 403) {
    // the backend refused the gateway's own key: not the client's to fix
    const said = redactor.scrub(`backend ${origin} refused the gateway's key (${r.status}): ${r.body.slice(0, 500)}`);
    sendJson(res, 502, new ApiError(502, said, null, 'backend_auth').body());
    return { status: 502, attempts, error: said };
  }
  if (r.status >= 200 && r.status < 300) {
    sendJson(res, r.status, ok(r.body), retryAfter(r));
    return { status: r.status, attempts, body: r.body };
  }
  const said = redactor.scrub(r.body);
  sendJson(res, r.status, said, retryAfter(r));
  return { status: r.status, attempts, error: said.slice(0, 2000) };
}

function retryAfter(r: HttpResponse): Record<string, string> {
  const v = r.headers.get('retry-after');
  return v === undefined ? {} : { 'retry-after': v };
}
