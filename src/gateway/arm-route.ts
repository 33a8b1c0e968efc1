import type http from 'node:http';
import type { Arm } from './arms.js';
import type { Backend } from './backends.js';
import { headerText, type RouteContext } from './context.js';
import { keyOf } from './sessions.js';

/**
 * A request's arm, from its session (the key Sessions groups it by), and the backend that answers it
 * there: production's as it is; the canary's asks for the canary's weights by name. A canary that
 * cannot be served on this model (an adapter that would not load) leaves the request to production.
 */
export async function routeArm(
  ctx: RouteContext,
  req: http.IncomingMessage,
  body: Record<string, unknown>,
  client: string,
  backend: Backend,
): Promise<{ arm: Arm; backend: Backend }> {
  const { key } = keyOf({
    header: headerText(req.headers['x-session-id']),
    user: body.user,
    metadata: body.metadata,
    client,
    remote: req.socket.remoteAddress ?? '',
  });
  const arm = ctx.arms.pick(key);
  if (arm.name === 'production') return { arm, backend };
  const production = ctx.arms.current().production;
  const model = await ctx.canaryModels.model(backend, arm.set!, production);
  if (model === null) return { arm: { name: 'production', set: production }, backend };
  return { arm, backend: model === backend.model ? backend : { ...backend, model } };
}
