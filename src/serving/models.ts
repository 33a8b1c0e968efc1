import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_MODEL_NAME } from '../config/defaults.js';
import { remoteUrls, type ModelConfig, type RLConfig } from '../config/schema.js';
import { UserError } from '../errors.js';
import type { PyEvent } from '../python/module.js';
import { venvPython } from '../python/venv.js';
import type { ResolvedWeights } from '../resources/weights.js';
import { HOST } from '../store/process-owner.js';
import { startLocalServer, type LocalServer, type ServeDevice, type ServeEngine } from './local-server.js';
import { registerServer, unregisterServer, type ServerEntry } from './registry.js';
import { loraName } from './vllm-lora.js';

/** What one server serves: weights under a name, with a config model's `local` settings when there is one. */
export interface ServeTarget {
  /** The key under `models` (or, for --weights without a local model, the served name). */
  modelKey: string;
  /** The model name clients send. */
  servedName: string;
  weights: ResolvedWeights;
  local?: NonNullable<ModelConfig['local']>;
}

export type ResolveWeights = (ref: string, where: string) => ResolvedWeights;

/** The config models with `local` weights, in config order. */
export function localModels(config: RLConfig): string[] {
  return Object.entries(config.models)
    .filter(([, m]) => m.local)
    .map(([name]) => name);
}

/**
 * What to serve for config model `modelName` (default: the first with `local`), with `weightsRef`
 * overriding its local.weights; without any local model, `weightsRef` is served under its own name.
 */
export function serveTarget(
  config: RLConfig,
  resolve: ResolveWeights,
  modelName?: string,
  weightsRef?: string,
): ServeTarget {
  const name = modelName ?? localModels(config)[0];
  if (name === undefined) {
    if (!weightsRef)
      throw new UserError(
        'no model in the config has local weights',
        'add models.<name>.local.weights, or pass --weights REF',
      );
    const weights = resolve(weightsRef, '--weights');
    const servedName =
      weights.resource?.name ?? (weights.kind === 'builtin' ? DEFAULT_MODEL_NAME : path.basename(weights.dir));
    return { modelKey: servedName, servedName, weights };
  }
  const mc = config.models[name];
  if (!mc || !Object.hasOwn(config.models, name))
    throw new UserError(`unknown model "${name}"; models: ${Object.keys(config.models).join(', ') || 'none'}`);
  if (!mc.local && !weightsRef) {
    throw new UserError(
      `models.${name} has no local weights (it is served at ${remoteUrls(mc).join(', ') || 'its base_url'})`,
      'set models.<name>.local.weights, or pass --weights REF',
    );
  }
  const weights = resolve(weightsRef ?? mc.local!.weights, weightsRef ? '--weights' : `models.${name}.local.weights`);
  return { modelKey: name, servedName: mc.model, weights, local: mc.local };
}

/** Targets with the same key are served by one server. */
export function serverKey(t: ServeTarget): string {
  const l = t.local;
  return JSON.stringify([t.weights.dir, t.servedName, l?.host, l?.port, l?.device, l?.engine, l?.max_batch_size]);
}

/**
 * Each request's context on a server for outside clients (`serve`, the gateway's; llama.cpp, capped by the
 * model's own): MassGen's prompts are 3–5k tokens once answers are shown, more than the automatic share of a
 * runtime server's KV cache (4096 cells a sequence).
 */
export const CLIENT_CONTEXT_TOKENS = 8192;

export interface ServeOptions {
  host?: string;
  port?: number;
  device?: ServeDevice;
  engine?: ServeEngine;
  maxBatchSize?: number;
  /** llama.cpp: the context of each sequence (KV cells); default: the server's automatic size. */
  contextTokens?: number;
  startupTimeoutMs?: number;
  /** The server log; default <data_dir>/logs/serve-<model>.log; false for none. */
  logFile?: string | false;
  signal?: AbortSignal;
  onEvent?: (event: PyEvent) => void;
  /** A deploy may swap this server to the new production weights (registry: follows_production). */
  followsProduction?: boolean;
  /**
   * An adapter served merged into its base (llama.cpp; unless local.merge_adapter is false): for a server that
   * serves that one adapter for its life, as a run's own do. Nothing can load another adapter beside it.
   */
  mergeAdapter?: boolean;
}

export interface ServedModel extends LocalServer {
  modelName: string;
  weights: ResolvedWeights;
  logFile?: string;
  /** Its entry in the registry of running servers (<data_dir>/servers/<pid>.json), removed when it exits. */
  registryFile: string;
}

/** The trainer venv's Python, which serves local weights; a UserError (prefixed with `field`) when the venv is missing. */
export function servingPython(venvDir: string, field?: string): string {
  const python = venvPython(venvDir);
  if (!fs.existsSync(python))
    throw new UserError(
      `${field ? `${field}: ` : ''}the trainer virtualenv that serves local weights is missing (${venvDir})`,
      'run `massgen-rl doctor --fix`',
    );
  return python;
}

/** Starts the built-in server for a target with the trainer venv's Python, and records it in the registry while it runs. */
export async function startServer(
  t: ServeTarget,
  where: { venvDir: string; dataDir: string },
  opts: ServeOptions = {},
): Promise<ServedModel> {
  const python = servingPython(where.venvDir, t.local ? `models.${t.modelKey}.local` : undefined);
  const logFile =
    opts.logFile === false ? undefined : (opts.logFile ?? path.join(where.dataDir, 'logs', `serve-${t.modelKey}.log`));
  const l = t.local;
  const resource = t.weights.resource;
  const server = await startLocalServer({
    python,
    modelDir: t.weights.dir,
    baseDir: t.weights.baseDir,
    servedName: t.servedName,
    // the name a deploy knows this adapter by (publish unloads it by that name once it is swapped out)
    adapterName: t.weights.adapter && resource ? loraName(resource.name, resource.version) : undefined,
    mergeAdapter: Boolean(opts.mergeAdapter && t.weights.adapter && (l?.merge_adapter ?? true)),
    host: opts.host ?? l?.host ?? '127.0.0.1',
    port: opts.port ?? l?.port ?? 0,
    device: opts.device ?? l?.device ?? 'auto',
    engine: opts.engine ?? l?.engine ?? 'auto',
    maxBatchSize: opts.maxBatchSize ?? l?.max_batch_size ?? 8,
    contextTokens: opts.contextTokens,
    startupTimeoutMs: opts.startupTimeoutMs ?? (l?.startup_timeout_s ?? 180) * 1000,
    logFile,
    signal: opts.signal,
    onEvent: opts.onEvent,
  });
  let registryFile: string;
  try {
    registryFile = registerServer(where.dataDir, entryOf(t, server, opts.followsProduction ?? false));
  } catch (err) {
    await server.stop();
    throw err;
  }
  void server.exited.then(() => unregisterServer(registryFile));
  return { ...server, modelName: t.modelKey, weights: t.weights, logFile, registryFile };
}

function entryOf(t: ServeTarget, server: LocalServer, followsProduction: boolean): ServerEntry {
  const w = t.weights;
  const base = typeof server.ready.base === 'string' ? server.ready.base : (w.baseDir ?? null);
  return {
    base_url: server.baseUrl,
    model: t.modelKey,
    served_name: server.model,
    weights: { dir: w.dir, adapter: w.adapter, base_dir: w.adapter ? base : null, resource: w.resource ?? null },
    pid: server.pid,
    started_at: new Date().toISOString(),
    host: HOST,
    backend: String(server.ready.backend ?? 'transformers'),
    follows_production: followsProduction,
    owner_pid: process.pid,
  };
}
