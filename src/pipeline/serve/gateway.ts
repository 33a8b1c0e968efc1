import { startGateway, type Gateway, type GatewayOptions } from '../../gateway/server.js';
import type { Runtime } from '../../runtime/runtime.js';
import { syncProduction } from '../production-sync.js';

export type { Gateway, GatewayOptions } from '../../gateway/server.js';

/**
 * Starts the gateway in the foreground: an OpenAI-compatible endpoint routing each request's `model`
 * to the config model of that name (a local model's server starts on its first request), every call
 * captured as a prompt span of its session's rollout. The caller stops it (gateway.stop()) before
 * closing the runtime. With telemetry.otlp.endpoint set, ended sessions go out as OTLP spans in the background.
 */
export function gateway(rt: Runtime, opts: GatewayOptions = {}): Promise<Gateway> {
  // an agent given production's system prompt needs production up to date with the config first
  if (Object.values(rt.config.gateway.agents).some((a) => a.system_prompt === 'production')) syncProduction(rt);
  // a session's rollout goes out as OTLP spans once it ends (telemetry.otlp.endpoint)
  rt.followTelemetry((m) => opts.onError?.(new Error(m)));
  return startGateway(rt, opts);
}
