import type http from 'node:http';
import type { Store } from '../store/index.js';
import type { Redactor } from '../store/redact.js';
import type { Arms } from './arms.js';
import type { GatewayAuth } from './auth.js';
import type { Backends } from './backends.js';
import type { CanaryModels } from './canary-models.js';
import type { Capture } from './capture.js';
import type { GatewayLimits } from './limits.js';
import type { GatewayMetrics } from './metrics.js';
import type { Sessions, SessionSource } from './sessions.js';
import type { SetModels } from './set-models.js';
import type { SystemPrompts } from './system-prompt.js';

/** What every route handler shares. */
export interface RouteContext {
  auth: GatewayAuth;
  backends: Backends;
  /** Each session's arm, production or the canary, and the canary's model names. */
  arms: Arms;
  canaryModels: CanaryModels;
  /** The model name production's requests carry (a remote LoRA server's adapter of production). */
  setModels: SetModels;
  sessions: Sessions;
  capture: Capture;
  metrics: GatewayMetrics;
  /** Where /v1/feedback stores feedback on rollouts already finished, and the reward weights of their totals. */
  store: Store;
  weights: Partial<Record<string, number>>;
  limits: GatewayLimits;
  /** What a backend says is passed on only through this: a backend may echo its own key. */
  redactor: Redactor;
  /** gateway.agents' system prompts, taken from the set of each request's arm. */
  systemPrompts: SystemPrompts;
}

/** The agent a call names: its X-Agent-Id header, else the agent of the alias it sends as its model. */
export function namedAgent(backends: Backends, headers: http.IncomingHttpHeaders, model: unknown): string | null {
  return headerText(headers['x-agent-id']) ?? (typeof model === 'string' ? backends.agentOf(model) : undefined) ?? null;
}

/** What a call's session is known by: its X-Session-Id, the body's `user` and `metadata`, its client and address. */
export function sessionSource(req: http.IncomingMessage, body: Record<string, unknown>, client: string): SessionSource {
  return {
    header: headerText(req.headers['x-session-id']),
    user: body.user,
    metadata: body.metadata,
    client,
    remote: req.socket.remoteAddress ?? '',
  };
}

/** A header's value, trimmed (undefined when absent or blank). */
export function headerText(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s.trim() === '' ? undefined : s.trim();
}
