import { errorMessage } from '../../errors.js';
import { modelWeightIds } from '../../resources/sets.js';
import type { Runtime } from '../../runtime/runtime.js';
import { loadNamed, planChanges, type ModelPlan } from '../../serving/model-plan.js';
import { updateServer, type ServerEntry } from '../../serving/registry.js';
import { swapServedWeights, type SwapCall } from '../../serving/swap.js';
import { loraCall, loraName } from '../../serving/vllm-lora.js';
import type { ResourceSet } from '../../store/index.js';
import { samePath } from '../../util/same-path.js';

/** The built-in server's engines that swap adapters behind the served name without a restart. */
const SWAPPABLE_BACKENDS = new Set(['transformers', 'llama.cpp']);

export interface ServerSwap {
  /** The server's base URL and process. */
  server: string;
  pid: number;
  /** The config model it serves, and the name its clients send. */
  model: string;
  servedName: string;
  /** The production weights of the model's agents now, e.g. `smollm2-135m-instruct v3` (and adapters by name). */
  weights: string;
  /** swapped: the served name gives them now, without a restart; left: the server is a run's own, not production's. */
  action: 'swapped' | 'restart needed' | 'left' | 'failed';
  detail: string;
  calls: SwapCall[];
}

/**
 * Makes one running local server serve what `next` gives its config model's agents, when that changed: the plan's
 * primary behind the served name (swapped without a restart when it is an adapter of the server's base, or that base),
 * then each agent's own adapter loaded by name (serving/model-plan.ts). Adapters `next` no longer names are unloaded
 * by the calls pushed on `later`, which the caller runs once clients have read the new pointer.
 */
export async function followProduction(
  rt: Runtime,
  entry: ServerEntry,
  next: ResourceSet,
  previous: ResourceSet,
  later: (() => Promise<void>)[],
): Promise<ServerSwap | undefined> {
  if (!Object.hasOwn(rt.config.models, entry.model) || !rt.config.models[entry.model]!.local) return undefined;
  const ids = (set: ResourceSet) => modelWeightIds(rt.config, set, entry.model).join();
  if (ids(next) === ids(previous)) return undefined;
  const store = rt.store();
  let now: ModelPlan | undefined;
  let before: ModelPlan | undefined;
  let unservable: string | undefined;
  try {
    now = rt.servingPlan(entry.model, next);
    before = rt.servingPlan(entry.model, previous);
  } catch (err) {
    unservable = errorMessage(err);
  }
  const names = modelWeightIds(rt.config, next, entry.model).map((id) => {
    const r = store.resources.get(id);
    return r ? `${r.name} v${r.version}` : id;
  });
  const row = (action: ServerSwap['action'], detail: string, calls: SwapCall[] = []): ServerSwap => ({
    server: entry.base_url,
    pid: entry.pid,
    model: entry.model,
    servedName: entry.served_name,
    weights: names.join(', '),
    action,
    detail,
    calls,
  });
  if (!entry.follows_production)
    return row(
      'left',
      `it serves ${served(entry)} for the run that started it (pid ${entry.owner_pid}), not production`,
    );
  if (unservable !== undefined) return row('restart needed', unservable);
  if (!now) return undefined;
  const w = now.primary;
  if (!w.path) return row('restart needed', `${w.name} v${w.version} has no folder on record`);
  const calls: SwapCall[] = [];
  const details: string[] = [];
  const keep = new Set(now.named.map((n) => n.name));
  if (!samePath(entry.weights.dir, w.path)) {
    const base = (entry.weights.adapter ? entry.weights.base_dir : entry.weights.dir) ?? '';
    if (!SWAPPABLE_BACKENDS.has(entry.backend))
      return row(
        'restart needed',
        `its ${entry.backend} backend cannot change the weights behind ${entry.served_name}`,
      );
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
    const r = await swapServedWeights(entry.base_url, entry.served_name, target, { keep });
    calls.push(...r.calls);
    if (!r.ok) return row('failed', r.detail, calls);
    details.push(r.detail);
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
  const change = planChanges(before, now);
  for (const c of await loadNamed(entry.base_url, change.load)) {
    calls.push({ action: 'load', loraName: c.loraName, ok: c.ok, detail: c.detail });
    if (!c.ok) return row('failed', `could not load ${c.loraName} beside ${entry.served_name}: ${c.detail}`, calls);
  }
  if (change.load.length) details.push(`loaded ${change.load.map((n) => n.name).join(', ')} by name`);
  const out = row(
    'swapped',
    details.join('; ') || `${entry.served_name} serves ${w.name} v${w.version} already`,
    calls,
  );
  const primaryName = loraName(w.name, w.version);
  for (const name of change.unload.filter((n) => n !== primaryName)) {
    later.push(async () => {
      const r = await loraCall({ baseUrl: entry.base_url }, 'unload', name);
      out.calls.push({ action: 'unload', loraName: name, ok: r.ok, detail: r.detail });
    });
  }
  return out;
}

function served(entry: ServerEntry): string {
  const r = entry.weights.resource;
  return r ? `${r.name} v${r.version}` : entry.weights.dir;
}
