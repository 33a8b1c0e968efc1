import type http from 'node:http';
import { feedbackAgents, FeedbackError, feedbackReward, MAX_NOTE_CHARS, storeRewards } from '../rewards/feedback.js';
import { StoreBusyError } from '../store/index.js';
import type { RewardInput } from '../trace/records.js';
import { readBody } from '../util/http-body.js';
import { ApiError, badRequest, sendJson } from './api-error.js';
import type { RouteContext } from './context.js';
import { parseJsonObject } from './request.js';
import type { Session } from './sessions.js';

interface FeedbackRequest {
  sessionId?: string;
  callId?: string;
  score: number;
  agent?: string;
  note?: string;
}

function optionalText(body: Record<string, unknown>, key: string, max = 256): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.trim() === '') throw badRequest(`${key} must be a non-empty string`, key);
  if (v.length > max) throw badRequest(`${key} must be at most ${max} characters, got ${v.length}`, key);
  return v;
}

/** Checks a /v1/feedback body: a 400 ApiError naming the `param` at fault. */
export function parseFeedbackRequest(text: string): FeedbackRequest {
  const b = parseJsonObject(text);
  const sessionId = optionalText(b, 'session_id');
  const callId = optionalText(b, 'call_id');
  if ((sessionId === undefined) === (callId === undefined)) {
    throw badRequest(
      'give exactly one of session_id (X-Session-Id or user) and call_id (x-request-id)',
      sessionId === undefined ? 'session_id' : 'call_id',
    );
  }
  if (typeof b.score !== 'number' || !Number.isFinite(b.score)) {
    throw badRequest('score must be a finite number', 'score');
  }
  return {
    sessionId,
    callId,
    score: b.score,
    agent: optionalText(b, 'agent'),
    note: optionalText(b, 'note', MAX_NOTE_CHARS),
  };
}

/**
 * POST /v1/feedback: a human reward on the client's own session (the open one of that id, else its
 * newest rollout) or on the session of one of its calls. An open session keeps it until it closes, when
 * it is stored with the rollout's finish (202, `pending`); a finished rollout gets it now (200).
 */
export async function feedback(
  ctx: RouteContext,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  client: string,
): Promise<void> {
  const fb = parseFeedbackRequest(await readBody(req, ctx.limits.max_body_bytes));
  const reason = fb.note ?? `feedback from ${client} through the gateway`;
  let session: Session | undefined;
  let rolloutId: string | undefined;
  if (fb.callId !== undefined) {
    session = ctx.sessions.ofCall(fb.callId);
    if (session?.metadata.client !== client) session = undefined;
    rolloutId = session?.rolloutId ?? ctx.store.spans.gatewayCall(fb.callId, client);
    if (!rolloutId) throw new ApiError(404, `no call ${fb.callId} of this client`, 'call_id', 'call_not_found');
  } else {
    session = ctx.sessions.named(client, fb.sessionId!);
    rolloutId = session?.rolloutId ?? ctx.store.rollouts.gatewaySession(client, fb.sessionId!)?.id;
    if (!rolloutId) {
      throw new ApiError(404, `no session ${fb.sessionId} of this client`, 'session_id', 'session_not_found');
    }
  }
  const ids = { rollout_id: rolloutId, session_id: fb.sessionId ?? null, call_id: fb.callId ?? null };
  if (session && !session.done) {
    session.feedback.push(reward(fb, rolloutId, [...session.agents], reason));
    const body = { object: 'feedback', ...ids, status: 'pending', total_reward: null };
    return sendJson(res, 202, JSON.stringify(body));
  }
  const rollout = ctx.store.rollouts.get(rolloutId)!;
  if (rollout.status === 'running') {
    // open in another gateway on this store (this one keeps its open sessions in memory)
    throw new ApiError(
      409,
      `session ${rolloutId} is still open elsewhere; try again once it has closed`,
      fb.callId === undefined ? 'session_id' : 'call_id',
      'session_open',
    );
  }
  const input = reward(fb, rolloutId, feedbackAgents(ctx.store, rollout), reason);
  let total: number;
  try {
    total = (await ctx.store.write(() => storeRewards(ctx.store, rolloutId, [input], ctx.weights))).total;
  } catch (err) {
    if (err instanceof StoreBusyError) throw new ApiError(503, err.message, null, 'store_busy');
    throw err;
  }
  sendJson(res, 200, JSON.stringify({ object: 'feedback', ...ids, status: 'applied', total_reward: total }));
}

function reward(fb: FeedbackRequest, rolloutId: string, agents: string[], reason: string): RewardInput {
  try {
    return feedbackReward(fb, rolloutId, agents, reason);
  } catch (err) {
    if (err instanceof FeedbackError) throw badRequest(err.message, err.field);
    throw err;
  }
}
