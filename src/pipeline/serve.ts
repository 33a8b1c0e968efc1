import { fixedPort } from '../config/schema.js';
import type { PyEvent } from '../python/module.js';
import type { Runtime } from '../runtime/runtime.js';
import type { ServeEngine } from '../serving/local-server.js';
import { CLIENT_CONTEXT_TOKENS, serveTarget, startServer, type ServedModel } from '../serving/models.js';

export type { ServedModel } from '../serving/models.js';
export type { ServeEngine } from '../serving/local-server.js';

export interface ServeOptions {
  /** The config model to serve (default: the first with local weights). */
  model?: string;
  /** Overrides the model's local.weights (the serve command's --weights). */
  weights?: string;
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

/**
 * Starts a local model server in the foreground: the caller keeps it running and stops it. Serving a
 * config model's own weights (no `weights`), it serves what production serves that model's agents, and
 * follows production: a deploy swaps it to the new weights. It listens where a MassGen export points
 * (fixedPort), not on a free port.
 */
export function serve(rt: Runtime, opts: ServeOptions = {}): Promise<ServedModel> {
  const weights = opts.weights ?? rt.productionWeights(opts.model);
  const target = serveTarget(rt.config, (ref, where) => rt.weights(ref, where), opts.model, weights);
  return startServer(target, rt.paths, {
    host: opts.host,
    port: fixedPort(target.local, opts.port),
    engine: opts.engine,
    contextTokens: CLIENT_CONTEXT_TOKENS,
    logFile: opts.logFile,
    signal: opts.signal,
    onEvent: opts.onEvent,
    followsProduction: !opts.weights,
  });
}
