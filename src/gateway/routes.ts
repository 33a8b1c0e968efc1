import type http from 'node:http';
import { BodyRefused, readBody } from '../util/http-body.js';
import { sessionOfUrl } from '../util/session-url.js';
import { ApiError, sendError, sendJson } from './api-error.js';
import { routeArm } from './arm-route.js';
import { isLoopback } from './auth.js';
import { namedAgent, type RouteContext } from './context.js';
import { embeddings } from './embeddings.js';
import { feedback } from './feedback.js';
import { forward } from './forward.js';
import type { RequestRecord } from './metrics.js';
import { otlpTraces } from './otlp-traces.js';
import { PROM_CONTENT_TYPE } from './prom-text.js';
import { relayCall } from './relay-call.js';
import { parseChatRequest } from './request.js';

export type { RouteContext } from './context.js';

const CREATED = Math.floor(Date.now() / 1000);
const OWNER = 'massgen-rl';

/**
 * One HTTP request: /health, /metrics, /v1/models, /v1/chat/completions, /v1/embeddings, /v1/feedback,
 * /v1/traces (OTLP spans in);
 * OpenAI-shaped errors for the rest. Each is counted in the metrics when its response ends.
 */
export async function handleRequest(
  ctx: RouteContext,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  let path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '') || '/';
  const rec: RequestRecord = { route: path, model: '' };
  const t0 = performance.now();
  res.once('close', () => {
    ctx.metrics.record(rec, res.headersSent ? res.statusCode : 499, (performance.now() - t0) / 1000);
  });
  try {
    if (req.rawHeaders.length / 2 > ctx.limits.max_headers) {
      const message = `the request has over ${ctx.limits.max_headers} headers (gateway.max_headers)`;
      throw new ApiError(431, message, null, 'too_many_headers');
    }
    path = tagsFromPath(req, path);
    rec.route = path;
    if (path === '/health') return sendJson(res, 200, '{"status":"ok"}');
    const remote = req.socket.remoteAddress;
    // a scraper on this host needs no key; from elsewhere /metrics is a client route like the others
    const client =
      path === '/metrics' && remote !== undefined && isLoopback(remote)
        ? 'loopback'
        : ctx.auth.check(req.headers.authorization, remote, path === '/v1/traces');
    if (path === '/metrics') {
      if (req.method !== 'GET') throw notAllowed(req.method);
      const text = ctx.metrics.render();
      res.writeHead(200, { 'content-type': PROM_CONTENT_TYPE, 'content-length': Buffer.byteLength(text) });
      return void res.end(text);
    }
    if (path === '/v1/models') {
      if (req.method !== 'GET') throw notAllowed(req.method);
      const data = ctx.backends.names().map((id) => ({ id, object: 'model', created: CREATED, owned_by: OWNER }));
      return sendJson(res, 200, JSON.stringify({ object: 'list', data }));
    }
    if (path === '/v1/chat/completions') {
      if (req.method !== 'POST') throw notAllowed(req.method);
      return await chat(ctx, req, res, client, rec);
    }
    if (path === '/v1/embeddings') {
      if (req.method !== 'POST') throw notAllowed(req.method);
      return await embeddings(ctx, req, res, client, rec);
    }
    if (path === '/v1/feedback') {
      if (req.method !== 'POST') throw notAllowed(req.method);
      return await feedback(ctx, req, res, client);
    }
    if (path === '/v1/traces') {
      if (req.method !== 'POST') throw notAllowed(req.method);
      return await otlpTraces(ctx, req, res);
    }
    throw new ApiError(404, `no route ${req.method ?? 'GET'} ${path}`, null, 'unknown_url');
  } catch (err) {
    if (err instanceof ApiError) return sendError(res, err);
    if (err instanceof BodyRefused) return sendError(res, refusedBody(err));
    sendError(res, new ApiError(500, 'the gateway failed on this request', null, 'internal_error'));
    throw err;
  }
}

/**
 * A base URL that names its session and agent (`/session/<id>/agent/<id>/v1`), for clients that can set
 * nothing but the base URL (MassGen's configs): the same as sending X-Session-Id and X-Agent-Id.
 */
function tagsFromPath(req: http.IncomingMessage, path: string): string {
  const m = sessionOfUrl(path);
  if (!m || m.at !== 0 || !m.rest.startsWith('/v1/')) return path;
  const decode = (v: string) => {
    try {
      return decodeURIComponent(v);
    } catch {
      throw new ApiError(
        400,
        `the URL's session or agent is not valid percent-encoding: ${v.slice(0, 80)}`,
        null,
        'invalid_url',
      );
    }
  };
  req.headers['x-session-id'] = decode(m.session);
  if (m.agent !== undefined) req.headers['x-agent-id'] = decode(m.agent);
  return m.rest;
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
  ctx: RouteContext,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  client: string,
  rec: RequestRecord,
): Promise<void> {
  const startedAt = Date.now();
  const t0 = performance.now();
  const parsed = parseChatRequest(await readBody(req, ctx.limits.max_body_bytes));
  const agent = namedAgent(ctx.backends, req.headers, parsed.model);
  const routed = await routeArm(ctx, req, parsed.body, client, await ctx.backends.get(parsed.model), agent);
  const { arm, backend } = routed;
  // the arm's set serves this request: an agent's system prompt comes from it (gateway.agents)
  const { request, note } = ctx.systemPrompts.apply(parsed, agent, arm.set ?? undefined);
  await relayCall(
    ctx,
    req,
    res,
    { client, rec, startedAt, t0 },
    {
      backend,
      body: request.body,
      stream: request.stream,
      kind: 'chat',
      systemPrompt: note,
      arm,
      send: (signal) => forward(backend, request, res, signal, ctx.redactor),
    },
  );
}
