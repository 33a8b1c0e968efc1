import { fixedPort } from '../../config/schema.js';
import { UserError } from '../../errors.js';
import { resolveSet } from '../../evaluation/candidates.js';
import type { PyEvent } from '../../python/module.js';
import { resourceRef } from '../../resources/weights.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { ServeEngine } from '../../serving/local-server.js';
import { loadNamed } from '../../serving/model-plan.js';
import { CLIENT_CONTEXT_TOKENS, serveTarget, startServer, type ServedModel } from '../../serving/models.js';
import { syncProduction } from '../production-sync.js';

export type { ServedModel } from '../../serving/models.js';
export type { ServeEngine } from '../../serving/local-server.js';

export interface ServeOptions {
  /** The config model to serve (default: the first with local weights). */
  model?: string;
  /** Overrides the model's local.weights (the serve command's --weights). */
  weights?: string;
  /** Serves this set's weights (the serve command's --set: `set:N`, `vN`, …) instead of production's. */
  set?: string;
  host?: string;
  /** Default: the model's local.port, else DEFAULT_SERVE_PORT (where a MassGen export points); 0 picks a free port. */
  port?: number;
  /** Overrides the model's local.engine (the serve command's --engine). */
  engine?: ServeEngine;
  /** The server log; default <data_dir>/logs/serve-<model>.log; false for none. */
  logFile?: string | false;
  signal?: AbortSignal;
  onEvent?: (event: PyEvent) => void;
}

/** A started server, with the adapters it loaded beside its weights by name (roles). */
export type Served = ServedModel & { adapters: { name: string; weights: string }[] };

/**
 * Starts a local model server in the foreground: the caller keeps it running and stops it. Serving a
 * config model's own weights (no `weights`), it serves what production (or `set`) serves that model's agents:
 * the plan's primary weights under the served name and each other agent's adapter by its own name
 * (serving/model-plan.ts). Serving production, it follows production: a deploy swaps it to the new weights.
 * It listens where a MassGen export points (fixedPort), not on a free port.
 */
export async function serve(rt: Runtime, opts: ServeOptions = {}): Promise<Served> {
  if (opts.weights && opts.set) throw new UserError('--weights and --set each choose what to serve: pass one of them');
  const set = opts.set ? resolveSet(rt.setContext(), syncProduction(rt), opts.set, '--set') : undefined;
  const plan = opts.weights ? undefined : rt.servingPlan(opts.model, set);
  if (set && !plan)
    throw new UserError(`--set ${opts.set}: the set gives no local weights to the agents of the model served`);
  const weights = opts.weights ?? (plan && resourceRef(plan.primary));
  const target = serveTarget(rt.config, (ref, where) => rt.weights(ref, where), opts.model, weights);
  const server = await startServer(target, rt.paths, {
    host: opts.host,
    port: fixedPort(target.local, opts.port),
    engine: opts.engine,
    contextTokens: CLIENT_CONTEXT_TOKENS,
    logFile: opts.logFile,
    signal: opts.signal,
    onEvent: opts.onEvent,
    followsProduction: !opts.weights && !opts.set,
  });
  const named = plan?.named ?? [];
  const failed = (await loadNamed(server.baseUrl, named)).find((c) => !c.ok);
  if (failed) {
    await server.stop();
    throw new UserError(`could not load the adapter ${failed.loraName} beside ${server.model}: ${failed.detail}`);
  }
  return {
    ...server,
    adapters: named.map((n) => ({ name: n.name, weights: `${n.weights.name} v${n.weights.version}` })),
  };
}
