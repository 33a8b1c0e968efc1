import type { PyEvent } from '../python/module.js';
import type { Runtime } from '../runtime/runtime.js';
import { serveTarget, startServer, type ServedModel } from '../serving/models.js';

export type { ServedModel } from '../serving/models.js';

export interface ServeOptions {
  /** The config model to serve (default: the first with local weights). */
  model?: string;
  /** Overrides the model's local.weights (the serve command's --weights). */
  weights?: string;
  host?: string;
  port?: number;
  /** The server log; default <data_dir>/logs/serve-<model>.log; false for none. */
  logFile?: string | false;
  signal?: AbortSignal;
  onEvent?: (event: PyEvent) => void;
}

/**
 * Starts a local model server in the foreground: the caller keeps it running and stops it. Serving a
 * config model's own weights (no `weights`), it follows production: a deploy swaps it to the new weights.
 */
export function serve(rt: Runtime, opts: ServeOptions = {}): Promise<ServedModel> {
  const target = serveTarget(rt.config, (ref, where) => rt.weights(ref, where), opts.model, opts.weights);
  return startServer(target, rt.paths, {
    host: opts.host, port: opts.port, logFile: opts.logFile, signal: opts.signal, onEvent: opts.onEvent, followsProduction: !opts.weights,
  });
}
