import type http from 'node:http';
import { newId } from '../util/ids.js';
import { ApiError, sendError } from './api-error.js';
import type { Arm } from './arms.js';
import type { Backend } from './backends.js';
import { namedAgent, sessionSource, type RouteContext } from './context.js';
import type { Forwarded } from './forward.js';
import type { RequestRecord } from './metrics.js';
import type { SystemPromptNote } from './system-prompt.js';

/** One call as a route makes it: where it goes, what the client sent, and how it is sent. */
export interface CallSpec {
  backend: Backend;
  body: Record<string, unknown>;
  stream: boolean;
  kind: 'chat' | 'embeddings';
  /** `body`'s system prompt is the agent's, not the client's. */
  systemPrompt?: SystemPromptNote;
  /** The arm answering it (production when absent). */
  arm?: Arm;
  /** Sends it and writes the answer to the client; a backend's refusal comes back as an ApiError. */
  send(signal: AbortSignal): Promise<Forwarded>;
}

/**
 * A call through the gateway, the part every route shares: its id in `x-request-id` (the client's
 * handle for /v1/feedback), the backend's answer relayed (an error the backend gave as the client's
 * error), the client hanging up turned into a cancel, then the call captured in its session.
 */
export async function relayCall(
  ctx: RouteContext,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  call: { client: string; rec: RequestRecord; startedAt: number; t0: number },
  spec: CallSpec,
): Promise<void> {
  call.rec.model = spec.backend.name;
  call.rec.arm = spec.arm?.name ?? 'production';
  const callId = newId('call');
  res.setHeader('x-request-id', callId);
  const aborted = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) aborted.abort(new Error('the client closed the connection'));
  };
  res.on('close', onClose);
  const release = holdEnd(res);
  let forwarded: Forwarded;
  try {
    forwarded = await spec.send(aborted.signal);
  } catch (err) {
    if (!(err instanceof ApiError)) {
      release();
      throw err;
    }
    // a backend that could not answer: the client gets the error, the call is captured with it
    sendError(res, err);
    forwarded = { status: err.status, attempts: 1, error: err.message };
  } finally {
    res.off('close', onClose);
  }
  try {
    capture(ctx, req, call, spec, callId, forwarded, release);
  } catch (err) {
    release();
    throw err;
  }
}

/**
 * Holds the response's end back until release(): a call counts as completed when its client has the whole
 * response, so the response ends only once the call is journaled (a kill then loses nothing a client got).
 */
function holdEnd(res: http.ServerResponse): () => void {
  let held: unknown[] | undefined;
  let released = false;
  const end = res.end;
  res.end = function holding(this: http.ServerResponse, ...args: unknown[]) {
    held = args;
    return this;
  } as typeof res.end;
  return () => {
    if (released) return;
    released = true;
    res.end = end; // assigned, not deleted: a delete would slow every later property access on res
    if (held) (end as (...a: unknown[]) => void).apply(res, held);
  };
}

function capture(
  ctx: RouteContext,
  req: http.IncomingMessage,
  call: { client: string; rec: RequestRecord; startedAt: number; t0: number },
  spec: CallSpec,
  callId: string,
  forwarded: Forwarded,
  journaled: () => void,
): void {
  if (forwarded.cancelled) call.rec.status = 499;
  const ttft = forwarded.result?.ttftMs;
  if (typeof ttft === 'number') call.rec.ttftS = ttft / 1000;
  const agent = namedAgent(ctx.backends, req.headers, spec.body.model);
  const session = ctx.sessions.touch(sessionSource(req, spec.body, call.client), call.startedAt, callId, agent);
  ctx.capture.add(
    {
      callId,
      session,
      agent,
      client: call.client,
      startedAt: call.startedAt,
      latencyMs: performance.now() - call.t0,
      request: spec.body,
      backend: { name: spec.backend.name, model: spec.backend.model },
      stream: spec.stream,
      forwarded,
      ...(spec.kind === 'embeddings' ? { kind: 'embeddings' as const } : {}),
      ...(spec.systemPrompt ? { systemPrompt: spec.systemPrompt } : {}),
      ...(spec.arm?.name === 'canary' ? { resourceSetId: spec.arm.set!.id } : {}),
    },
    journaled,
  );
}
