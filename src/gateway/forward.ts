import type http from 'node:http';
import { errorMessage } from '../errors.js';
import { HttpTimeoutError, postJson, type HttpResponse } from '../llm/http.js';
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

/**
 * Sends the client's request to the backend and its answer back: a stream relayed as it arrives, a
 * whole completion stripped of what the client did not ask for, an error status passed on as it came.
 * A network failure before anything reached the client goes to the next replica (max_retries).
 */
export async function forward(
  backend: Backend,
  req: ClientRequest,
  res: http.ServerResponse,
  signal: AbortSignal,
  redactor: Redactor,
): Promise<Forwarded> {
  for (let attempts = 1; ; attempts++) {
    const pick = backend.replicas.acquire();
    if ('waitMs' in pick) {
      const message = `every backend of ${backend.name} is down; try again in ${Math.ceil(pick.waitMs)} ms`;
      throw new ApiError(503, message, null, 'backend_down');
    }
    const { lease } = pick;
    const relay = req.stream ? new StreamRelay(res, req.wants) : undefined;
    let r: HttpResponse;
    try {
      const body = backendBody(req, backend.model, backend.caps);
      r = await postJson(lease.item, body, backend.timeoutMs, signal, relay?.sink);
    } catch (err) {
      if (signal.aborted) {
        backend.replicas.released(lease);
        relay?.end();
        return { status: 499, attempts, cancelled: true, error: 'the client closed the connection' };
      }
      const code = (err as NodeJS.ErrnoException).code ?? '';
      const retriable = err instanceof HttpTimeoutError || RETRIABLE_CODES.has(code);
      if (retriable) backend.replicas.failed(lease);
      else backend.replicas.released(lease);
      const message = redactor.scrub(`backend ${lease.item.url.origin}: ${errorMessage(err)}`);
      if (relay?.started) {
        relay.end();
        return { status: 502, attempts, error: message };
      }
      if (retriable && attempts <= backend.maxRetries) continue;
      throw new ApiError(err instanceof HttpTimeoutError ? 504 : 502, message, null, 'backend_error');
    }
    if (relay?.started) {
      backend.replicas.succeeded(lease);
      relay.end();
      try {
        const result = relay.completion.result({ latencyMs: 0, attempts, model: backend.model });
        return { status: 200, attempts, result };
      } catch (err) {
        return { status: 502, attempts, error: errorMessage(err) };
      }
    }
    if (r.status === 400 && dropRefused(r.body, backend.caps, req.wants)) {
      backend.replicas.succeeded(lease);
      attempts--;
      continue;
    }
    if (r.status === 429 || r.status >= 500) backend.replicas.failed(lease);
    else backend.replicas.succeeded(lease);
    return passOn(res, r, lease.item.url.origin, redactor, attempts, (body) => stripBody(body, req.wants));
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
