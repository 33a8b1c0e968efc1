import type http from 'node:http';
import { newId } from '../util/ids.js';
import { ApiError, sendError, sendJson } from './api-error.js';
import type { GatewayAuth } from './auth.js';
import type { Backends } from './backends.js';
import type { Capture } from './capture.js';
import { forward, type Forwarded } from './forward.js';
import { BodyRefused, readBody } from '../util/http-body.js';
import type { Redactor } from '../store/redact.js';
import type { GatewayLimits } from './limits.js';
import { parseChatRequest } from './request.js';
import type { Sessions } from './sessions.js';

export interface RouteContext {
  auth: GatewayAuth;
  backends: Backends;
  sessions: Sessions;
  capture: Capture;
  limits: GatewayLimits;
  /** What a backend says is passed on only through this: a backend may echo its own key. */
  redactor: Redactor;
}

const CREATED = Math.floor(Date.now() / 1000);
const OWNER = 'massgen-rl';

/** One HTTP request: /health, /v1/models, /v1/chat/completions; OpenAI-shaped errors for the rest. */
export async function handleRequest(
  ctx: RouteContext, req: http.IncomingMessage, res: http.ServerResponse,
): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '') || '/';
  try {
    if (req.rawHeaders.length / 2 > ctx.limits.max_headers) {
      const message = `the request has over ${ctx.limits.max_headers} headers (gateway.max_headers)`;
      throw new ApiError(431, message, null, 'too_many_headers');
    }
    if (path === '/health') return sendJson(res, 200, '{"status":"ok"}');
    const client = ctx.auth.check(req.headers.authorization, req.socket.remoteAddress);
    if (path === '/v1/models') {
      if (req.method !== 'GET') throw notAllowed(req.method);
      const data = ctx.backends.names().map((id) => ({ id, object: 'model', created: CREATED, owned_by: OWNER }));
      return sendJson(res, 200, JSON.stringify({ object: 'list', data }));
    }
    if (path === '/v1/chat/completions') {
      if (req.method !== 'POST') throw notAllowed(req.method);
      return await chat(ctx, req, res, client);
    }
    throw new ApiError(404, `no route ${req.method ?? 'GET'} ${path}`, null, 'unknown_url');
  } catch (err) {
    if (err instanceof ApiError) return sendError(res, err);
    if (err instanceof BodyRefused) return sendError(res, refusedBody(err));
    sendError(res, new ApiError(500, 'the gateway failed on this request', null, 'internal_error'));
    throw err;
  }
}

function refusedBody(err: BodyRefused): ApiError {
  return err.reason === 'too_large'
    ? new ApiError(413, err.message, null, 'request_too_large')
    : new ApiError(400, err.message, null, 'invalid_encoding');
}

function notAllowed(method: string | undefined): ApiError {
  return new ApiError(405, `method ${method ?? ''} is not allowed here`, null, 'method_not_allowed');
}

async function chat(
  ctx: RouteContext, req: http.IncomingMessage, res: http.ServerResponse, client: string,
): Promise<void> {
  const startedAt = Date.now();
  const t0 = performance.now();
  const request = parseChatRequest(await readBody(req, ctx.limits.max_body_bytes));
  const backend = await ctx.backends.get(request.model);
  const aborted = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) aborted.abort(new Error('the client closed the connection'));
  };
  res.on('close', onClose);
  let forwarded: Forwarded;
  try {
    forwarded = await forward(backend, request, res, aborted.signal, ctx.redactor);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    // a backend that could not answer: the client gets the error, the call is captured with it
    sendError(res, err);
    forwarded = { status: err.status, attempts: 1, error: err.message };
  } finally {
    res.off('close', onClose);
  }
  const session = ctx.sessions.touch({
    header: headerText(req.headers['x-session-id']), user: request.body.user, client,
    remote: req.socket.remoteAddress ?? '',
  }, startedAt);
  ctx.capture.add({
    callId: newId('call'), session, agent: headerText(req.headers['x-agent-id']) ?? null, client, startedAt,
    latencyMs: performance.now() - t0, request: request.body, backend: { name: backend.name, model: backend.model },
    stream: request.stream, forwarded,
  });
}

function headerText(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s.trim() === '' ? undefined : s.trim();
}
