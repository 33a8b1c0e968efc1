import type http from 'node:http';
import type { Arm } from './arms.js';
import type { Backend } from './backends.js';
import { sessionSource, type RouteContext } from './context.js';
import { keyOf } from './sessions.js';

/**
 * A request's arm, from its session (the key Sessions groups it by), and the backend that answers it
 * there: production's asks for production's weights (set-models.ts); the canary's for the canary's, by name; both
 * for the weights the set gives `agent` (the agent the request names) when its model's agents get different ones. A canary that
 * cannot be served on this model (an adapter that would not load) leaves the request to production.
 */
export async function routeArm(
  ctx: RouteContext,
  req: http.IncomingMessage,
  body: Record<string, unknown>,
  client: string,
  backend: Backend,
  agent: string | null = null,
): Promise<{ arm: Arm; backend: Backend }> {
  const { key } = keyOf(sessionSource(req, body, client));
  const arm = ctx.arms.pick(key);
  const production = arm.name === 'production' ? arm.set : ctx.arms.current().production;
  const model = arm.name === 'canary' ? await ctx.canaryModels.model(backend, arm.set!, production, agent) : null;
  if (model === null) {
    const served = ctx.setModels.production(backend, production, agent);
    return { arm: { name: 'production', set: production }, backend: withModel(backend, served) };
  }
  return { arm, backend: withModel(backend, model) };
}

function withModel(backend: Backend, model: string): Backend {
  return model === backend.model ? backend : { ...backend, model };
}
