import fs from 'node:fs';
import path from 'node:path';
import { errorMessage } from '../errors.js';
import { POINTER_REFRESH_MS } from '../gateway/arms.js';
import { PRODUCTION_FILE } from '../resources/production-switch.js';
import { modelWeightIds } from '../resources/sets.js';
import type { Runtime } from '../runtime/runtime.js';
import { liveServers, updateServer, type ServerEntry } from '../serving/registry.js';
import { swapServedWeights, type SwapCall } from '../serving/swap.js';
import { adapterTargets, ensureAdapter, loraCall, loraName, type LoraCall } from '../serving/vllm-lora.js';
import type { Resource, ResourceSet } from '../store/index.js';
import { checkMassgenTargets, massgenTargets, writeMassgen } from './massgen-export.js';

/** A replaced adapter stays loaded this long: past a gateway's pointer refresh, and its requests sent before it. */
const UNLOAD_GRACE_MS = POINTER_REFRESH_MS + 500;

/** The built-in server's engines that swap adapters behind the served name without a restart. */
const SWAPPABLE_BACKENDS = new Set(['transformers', 'llama.cpp']);

export interface Published {
  /** `<data_dir>/production.json`, rewritten with the switch. */
  productionFile: string;
  /** Adapter loads and unloads on remote LoRA-serving models (models.*.lora). */
  vllm: (LoraCall & { server: string; model: string })[];
  /** MassGen configs of the new production (--export-massgen, deploy.export_massgen). */
  massgen: { file: string; ok: boolean; detail: string }[];
  /** What happened to each running local server (the registry) whose config model's agents got new weights. */
  servers: ServerSwap[];
}

export interface PublishOptions {
  /** Also write production as a MassGen config here (relative to the cwd). */
  exportMassgen?: string;
}

/** What publish() will need, checked before production switches: a refusal then changes nothing. */
export function checkPublish(rt: Runtime, next: ResourceSet, opts: PublishOptions): void {
  checkMassgenTargets(rt, next, massgenTargets(rt, opts.exportMassgen));
}

export interface ServerSwap {
  /** The server's base URL and process. */
  server: string;
  pid: number;
  /** The config model it serves, and the name its clients send. */
  model: string;
  servedName: string;
  /** The production weights of the model's agents now, e.g. `smollm2-135m-instruct v3`. */
  weights: string;
  /** swapped: the served name gives them now, without a restart; left: the server is a run's own, not production's. */
  action: 'swapped' | 'restart needed' | 'left' | 'failed';
  detail: string;
  calls: SwapCall[];
}

/**
 * After production changed, the servers outside massgen-rl follow: on each remote model that serves a
 * line's adapters, the new adapter is loaded (if evaluation had not already) before the previous one is
 * unloaded, and that only once a gateway has read the new pointer, so requests never miss. Running local servers that follow production swap to the new
 * weights when those are an adapter of their base model (or that base itself), and say when they
 * need a restart instead. Then the MassGen configs are rewritten (a failed write is reported, not
 * thrown: production has switched already).
 */
export async function publish(
  rt: Runtime,
  next: ResourceSet,
  previous: ResourceSet,
  opts: PublishOptions,
): Promise<Published> {
  const out: Published = {
    productionFile: path.join(rt.paths.dataDir, PRODUCTION_FILE),
    vllm: [],
    massgen: [],
    servers: [],
  };
  const unloads: (() => Promise<void>)[] = [];
  for (const [name, model] of Object.entries(rt.config.models)) {
    if (!model.lora?.load_adapters) continue;
    const [now, before] = [adapterOf(rt, next, name), adapterOf(rt, previous, name)];
    for (const server of adapterTargets(model, rt.apiKey(name))) {
      const tag = { server: server.baseUrl, model: name };
      if (now && now.id !== before?.id)
        out.vllm.push({ ...tag, ...(await ensureAdapter(server, loraName(now.name, now.version), now.path!)) });
      if (before && before.id !== now?.id && (!now || out.vllm.at(-1)?.ok)) {
        const lora = loraName(before.name, before.version);
        unloads.push(async () => void out.vllm.push({ ...tag, ...(await loraCall(server, 'unload', lora)) }));
      }
    }
  }
  if (unloads.length) {
    // a gateway sharing the store asks for production's adapter by name until it reads the new pointer
    await new Promise((r) => setTimeout(r, UNLOAD_GRACE_MS));
    for (const unload of unloads) await unload();
  }
  for (const entry of liveServers(rt.paths.dataDir)) {
    const swap = await followProduction(rt, entry, next, previous);
    if (swap) out.servers.push(swap);
  }
  for (const file of massgenTargets(rt, opts.exportMassgen)) {
    try {
      writeMassgen(rt, next, file);
      out.massgen.push({ file, ok: true, detail: `MassGen config of set v${next.version}` });
    } catch (err) {
      out.massgen.push({ file, ok: false, detail: errorMessage(err) });
    }
  }
  return out;
}

/** The LoRA adapter the set serves to the agents of a config model, if it serves one. */
function adapterOf(rt: Runtime, set: ResourceSet, model: string): Resource | undefined {
  const store = rt.store();
  const agent = rt.config.agents.find((a) => a.model === model && set.members.agents[a.id]?.weights);
  const weights = agent && store.resources.get(set.members.agents[agent.id]!.weights!);
  return weights?.metadata.adapter && weights.path ? weights : undefined;
}

/** Swaps one running local server to the weights `next` gives its config model's agents, when they changed. */
async function followProduction(
  rt: Runtime,
  entry: ServerEntry,
  next: ResourceSet,
  previous: ResourceSet,
): Promise<ServerSwap | undefined> {
  if (!Object.hasOwn(rt.config.models, entry.model) || !rt.config.models[entry.model]!.local) return undefined;
  const [now, before] = [
    modelWeightIds(rt.config, next, entry.model),
    modelWeightIds(rt.config, previous, entry.model),
  ];
  if (now.join() === before.join()) return undefined;
  const store = rt.store();
  const w = now.length === 1 ? store.resources.get(now[0]!) : undefined;
  const row = (action: ServerSwap['action'], detail: string, calls: SwapCall[] = []): ServerSwap => ({
    server: entry.base_url,
    pid: entry.pid,
    model: entry.model,
    servedName: entry.served_name,
    weights: w ? `${w.name} v${w.version}` : now.map((id) => store.resources.get(id)?.name ?? id).join(', '),
    action,
    detail,
    calls,
  });
  if (!entry.follows_production)
    return row(
      'left',
      `it serves ${served(entry)} for the run that started it (pid ${entry.owner_pid}), not production`,
    );
  if (!w)
    return row('restart needed', `the agents of models.${entry.model} get different weights now; a server serves one`);
  if (!w.path) return row('restart needed', `${w.name} v${w.version} has no folder on record`);
  if (samePath(entry.weights.dir, w.path)) return undefined;
  const base = (entry.weights.adapter ? entry.weights.base_dir : entry.weights.dir) ?? '';
  if (!SWAPPABLE_BACKENDS.has(entry.backend))
    return row('restart needed', `its ${entry.backend} backend cannot change the weights behind ${entry.served_name}`);
  const adapterBase = typeof w.metadata.base_path === 'string' ? w.metadata.base_path : '';
  const target = samePath(w.path, base)
    ? null
    : w.metadata.adapter && samePath(adapterBase, base)
      ? { name: loraName(w.name, w.version), path: w.path }
      : undefined;
  if (target === undefined) {
    return row(
      'restart needed',
      w.metadata.adapter
        ? `${w.name} v${w.version} is an adapter of another base model (${adapterBase || 'not on record'}); the server runs on ${base}`
        : `${w.name} v${w.version} is a full model, not an adapter of the server's base model ${base}`,
    );
  }
  const r = await swapServedWeights(entry.base_url, entry.served_name, target);
  if (r.ok) {
    updateServer(rt.paths.dataDir, {
      ...entry,
      weights: {
        dir: w.path,
        adapter: target !== null,
        base_dir: target ? base : null,
        resource: { id: w.id, name: w.name, version: w.version },
      },
    });
  }
  return row(r.ok ? 'swapped' : 'failed', r.detail, r.calls);
}

function served(entry: ServerEntry): string {
  const r = entry.weights.resource;
  return r ? `${r.name} v${r.version}` : entry.weights.dir;
}

function samePath(a: string, b: string): boolean {
  if (!a || !b) return false;
  const real = (p: string) => {
    try {
      return fs.realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  return real(a) === real(b);
}
