import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_MODEL_NAME } from '../config/defaults.js';
import type { LoadedConfig } from '../config/load.js';
import { UserError } from '../errors.js';
import { startLocalServer, type LocalServer, type ServeDevice } from '../serving/local-server.js';
import { readModelManifest } from '../resources/default-model.js';
import type { Resource, Store } from '../store/index.js';
import type { PyEvent } from '../python/module.js';
import { venvPython } from '../python/venv.js';
import { openStore } from './store.js';

export const BUILTIN_WEIGHTS = [DEFAULT_MODEL_NAME] as const;

/** Where a `local.weights` reference points. */
export interface ResolvedWeights {
  ref: string;
  kind: 'builtin' | 'resource' | 'path';
  /** Absolute path of the HF model folder or LoRA adapter folder. */
  dir: string;
  /** The folder is a LoRA adapter (adapter_config.json), served on top of its base model. */
  adapter: boolean;
  /** Base model folder for an adapter, when the weight resource records one (metadata.base_path). */
  baseDir?: string;
  resource?: { id: string; name: string; version: number };
}

/**
 * Resolves `builtin:<name>`, `resource:<name>[@<version>|@latest|@production]` (a weight resource in the
 * store; latest version by default) or a folder path relative to the config file. `where` prefixes
 * error messages (e.g. `models.local.local.weights`).
 */
export function resolveWeights(loaded: LoadedConfig, weights: string, store?: Store, where?: string): ResolvedWeights {
  const ref = weights.trim();
  const fail = (message: string, hint?: string): never => {
    throw new UserError(`${where ? `${where}: ` : ''}${message}`, hint);
  };
  if (ref.startsWith('builtin:')) {
    const name = ref.slice('builtin:'.length);
    if (!(BUILTIN_WEIGHTS as readonly string[]).includes(name)) {
      fail(`unknown built-in weights "${ref}"; available: ${BUILTIN_WEIGHTS.map((b) => `builtin:${b}`).join(', ')}`);
    }
    const dir = loaded.paths.defaultModelDir;
    if (!readModelManifest(dir)) fail(`the built-in model ${name} is not provisioned yet (no converted model in ${dir})`, 'run `massgen-rl doctor --fix`');
    return { ref, kind: 'builtin', dir, adapter: false };
  }
  if (ref.startsWith('resource:')) {
    const spec = ref.slice('resource:'.length);
    const at = spec.lastIndexOf('@');
    const name = at > 0 ? spec.slice(0, at) : spec;
    const version = at > 0 ? spec.slice(at + 1) : 'latest';
    if (!name) fail(`"${ref}" names no resource; use resource:<name>[@<version>]`);
    if (!/^(\d+|latest|production)$/.test(version)) fail(`"${ref}": the version must be a number, latest or production`);
    if (!store && !fs.existsSync(loaded.paths.storePath)) {
      fail(`weights "${ref}" refer to the store, which does not exist yet (${loaded.paths.storePath})`, 'run `massgen-rl doctor --fix` to create it and record the base model');
    }
    const s = store ?? openStore(loaded, { mustExist: true });
    let resource: Resource | undefined;
    let available: Resource[];
    try {
      available = s.resources.list('weight');
      resource = version === 'production' ? s.resources.production('weight', name)
        : version === 'latest' ? s.resources.latest('weight', name)
          : available.find((r) => r.name === name && r.version === Number(version));
    } finally {
      if (!store) s.close();
    }
    if (!resource) {
      const names = [...new Set(available.map((r) => r.name))].map((n) => {
        const versions = available.filter((r) => r.name === n).map((r) => r.version);
        return `${n} (v${versions.join(', v')})`;
      });
      const known = available.some((r) => r.name === name);
      fail(`${known ? `weight resource "${name}" has no version ${version}` : `unknown weight resource "${name}"`}; ${names.length ? `available: ${names.join('; ')}` : 'the store has no weight resources yet'}`,
        names.length ? undefined : 'run `massgen-rl doctor --fix` to record the base model');
    }
    const r = resource!;
    if (!r.path) fail(`weight resource ${r.name} v${r.version} has no folder on record`);
    const adapter = checkFolder(r.path!, ref, fail);
    const base = typeof r.metadata.base_path === 'string' ? r.metadata.base_path : undefined;
    return { ref, kind: 'resource', dir: r.path!, adapter, baseDir: adapter ? base : undefined, resource: { id: r.id, name: r.name, version: r.version } };
  }
  const dir = path.resolve(loaded.paths.baseDir, ref.startsWith('~/') ? path.join(process.env.HOME ?? '~', ref.slice(2)) : ref);
  return { ref, kind: 'path', dir, adapter: checkFolder(dir, ref, fail) };
}

/** True for a LoRA adapter folder, false for a full model folder; anything else fails. */
function checkFolder(dir: string, ref: string, fail: (m: string, h?: string) => never): boolean {
  let stat: fs.Stats | undefined;
  try {
    stat = fs.statSync(dir);
  } catch {
    return fail(`no folder at ${dir} (weights "${ref}")`);
  }
  if (!stat.isDirectory()) fail(`${dir} is not a folder (weights "${ref}")`);
  if (fs.existsSync(path.join(dir, 'adapter_config.json'))) return true;
  if (fs.existsSync(path.join(dir, 'config.json'))) return false;
  return fail(`${dir} holds neither config.json (a model folder) nor adapter_config.json (a LoRA adapter) (weights "${ref}")`);
}

export interface ServeOptions {
  /** Used for resource: weights (opened briefly when not given). */
  store?: Store;
  /** Overrides the model's local.weights (the serve command's --weights). */
  weights?: string;
  host?: string;
  port?: number;
  device?: ServeDevice;
  maxBatchSize?: number;
  startupTimeoutMs?: number;
  /** The server log; default <data_dir>/logs/serve-<model>.log; false for none. */
  logFile?: string | false;
  signal?: AbortSignal;
  onEvent?: (event: PyEvent) => void;
}

export interface ServedModel extends LocalServer {
  /** The key under `models` (or, for --weights without a local model, the served name). */
  modelName: string;
  weights: ResolvedWeights;
  logFile?: string;
}

/** The config's models with `local` weights, in config order. */
export function localModels(loaded: LoadedConfig): string[] {
  return Object.entries(loaded.config.models).filter(([, m]) => m.local).map(([name]) => name);
}

/** Starts the built-in server for config model `modelName` (default: the first model with `local`). */
export async function serveModel(loaded: LoadedConfig, modelName?: string, opts: ServeOptions = {}): Promise<ServedModel> {
  const { config } = loaded;
  const models = Object.keys(config.models);
  const name = modelName ?? localModels(loaded)[0];
  let servedName: string;
  let weights: ResolvedWeights;
  const local = name ? config.models[name]?.local : undefined;
  if (name !== undefined) {
    const mc = config.models[name];
    if (!mc) throw new UserError(`unknown model "${name}"; models: ${models.join(', ') || 'none'}`);
    if (!mc.local && !opts.weights) {
      throw new UserError(`models.${name} has no local weights (it is served at ${mc.base_url ?? 'its base_url'})`, 'set models.<name>.local.weights, or pass --weights REF');
    }
    servedName = mc.model;
    weights = resolveWeights(loaded, opts.weights ?? mc.local!.weights, opts.store, opts.weights ? '--weights' : `models.${name}.local.weights`);
  } else {
    if (!opts.weights) {
      throw new UserError('no model in the config has local weights', 'add models.<name>.local.weights, or pass --weights REF');
    }
    weights = resolveWeights(loaded, opts.weights, opts.store, '--weights');
    servedName = weights.resource?.name ?? (weights.kind === 'builtin' ? DEFAULT_MODEL_NAME : path.basename(weights.dir));
  }
  const python = venvPython(loaded.paths.venvDir);
  if (!fs.existsSync(python)) throw new UserError(`the trainer virtualenv is missing (${loaded.paths.venvDir})`, 'run `massgen-rl doctor --fix`');
  const modelKey = name ?? servedName;
  const logFile = opts.logFile === false ? undefined : opts.logFile ?? path.join(loaded.paths.dataDir, 'logs', `serve-${modelKey}.log`);
  const server = await startLocalServer({
    python, modelDir: weights.dir, baseDir: weights.baseDir, servedName,
    host: opts.host ?? local?.host ?? '127.0.0.1',
    port: opts.port ?? local?.port ?? 0,
    device: opts.device ?? local?.device ?? 'auto',
    maxBatchSize: opts.maxBatchSize ?? local?.max_batch_size ?? 8,
    startupTimeoutMs: opts.startupTimeoutMs ?? (local?.startup_timeout_s ?? 180) * 1000,
    logFile, signal: opts.signal, onEvent: opts.onEvent,
  });
  return { ...server, modelName: modelKey, weights, logFile };
}

export interface LocalModels {
  /** Config model name → OpenAI base URL (http://host:port/v1) of its server. */
  baseUrls: Record<string, string>;
  /** One per distinct server (models with the same weights, served name and settings share one). */
  servers: ServedModel[];
  stopAll(): Promise<void>;
}

/**
 * Starts one server per distinct local model among `modelNames` (names without `local` are skipped),
 * concurrently; if any fails to start, the others are stopped and the first error is thrown.
 */
export async function startLocalModels(loaded: LoadedConfig, modelNames: readonly string[], store?: Store, opts: Pick<ServeOptions, 'signal' | 'onEvent' | 'logFile'> = {}): Promise<LocalModels> {
  const groups = new Map<string, string[]>();
  for (const name of modelNames) {
    const mc = loaded.config.models[name];
    if (!mc) throw new UserError(`unknown model "${name}"; models: ${Object.keys(loaded.config.models).join(', ')}`);
    if (!mc.local) continue;
    const weights = resolveWeights(loaded, mc.local.weights, store, `models.${name}.local.weights`);
    const key = JSON.stringify([weights.dir, mc.model, mc.local.host, mc.local.port, mc.local.device, mc.local.max_batch_size]);
    groups.set(key, [...(groups.get(key) ?? []), name]);
  }
  const started = await Promise.allSettled([...groups.values()].map((names) => serveModel(loaded, names[0], { ...opts, store })));
  const servers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const stopAll = async () => {
    await Promise.all(servers.map((s) => s.stop()));
  };
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await stopAll();
    throw failed.reason;
  }
  const baseUrls: Record<string, string> = {};
  [...groups.values()].forEach((names, i) => {
    for (const name of names) baseUrls[name] = servers[i]!.baseUrl;
  });
  return { baseUrls, servers, stopAll };
}
