import { errorMessage } from '../errors.js';
import { modelWeightIds } from '../resources/sets.js';
import type { Runtime } from '../runtime/runtime.js';
import {
  adapterTargets,
  ensureAdapter,
  loraCall,
  loraName,
  servedAdapterName,
  type VllmTarget,
} from '../serving/vllm-lora.js';
import type { ResourceSet } from '../store/index.js';
import type { ArmView } from './arms.js';
import type { Backend } from './backends.js';
import type { SetModels } from './set-models.js';

/** A canary that could not be served on a model is tried again after this long. */
const RETRY_MS = 30_000;

interface Served {
  at: number;
  /** Resolved: kept for the canary's life (a failure is tried again after RETRY_MS). */
  ok?: boolean;
  /** The model name canary requests carry; null: production answers them. */
  name: Promise<string | null>;
  /** The adapter loaded for it, and where (unloaded when the canary ends). */
  loaded?: { lora: string; weightId: string; model: string; targets: VllmTarget[] };
}

/**
 * The model name a canary's requests carry on each config model (for one agent, when the request names it):
 * production's (set-models.ts) when the canary gives the agent production's weights; else the canary's LoRA adapter
 * for that agent, loaded beside production's in the same server (a local one, or a remote one that serves a line's
 * adapters by name, LINE-vN) and asked for by name, so production's requests are untouched. When the canary ends,
 * its adapters are unloaded (the server drops one after the requests running on it finish) unless production now
 * uses them.
 */
export class CanaryModels {
  private readonly served = new Map<string, Served>();

  constructor(
    private readonly rt: Runtime,
    private readonly setModels: SetModels,
    private readonly onError?: (err: unknown) => void,
  ) {}

  /** The model name for a canary request to `backend`; null when the canary cannot be served there. */
  model(
    backend: Backend,
    canary: ResourceSet,
    production: ResourceSet | null,
    agent: string | null = null,
  ): Promise<string | null> {
    const key = `${canary.id}\0${backend.name}\0${agent ?? ''}`;
    const hit = this.served.get(key);
    if (hit && (hit.ok || Date.now() - hit.at < RETRY_MS)) return hit.name;
    const entry: Served = { at: Date.now(), name: Promise.resolve(null) };
    entry.name = this.resolve(backend, canary, production, agent, entry).then(
      (name) => {
        entry.ok = true;
        return name;
      },
      (err: unknown) => {
        this.onError?.(new Error(`the canary (set v${canary.version}) on ${backend.name}: ${errorMessage(err)}`));
        return null;
      },
    );
    this.served.set(key, entry);
    return entry.name;
  }

  /** After the canary changed: unloads the adapters of the canary that ended, unless production serves them now. */
  retire(before: ArmView, after: ArmView): void {
    const ended = before.canary?.set;
    if (!ended || ended.id === after.canary?.set.id) return;
    for (const [key, s] of this.served) {
      if (!key.startsWith(`${ended.id}\0`)) continue;
      this.served.delete(key);
      const l = s.loaded;
      if (!l || (after.production && modelWeightIds(this.rt.config, after.production, l.model).includes(l.weightId)))
        continue;
      for (const t of l.targets) {
        void loraCall(t, 'unload', l.lora).then((r) => {
          if (!r.ok) this.onError?.(new Error(`unloading the ended canary's ${l.lora}: ${r.detail}`));
        });
      }
    }
  }

  private async resolve(
    backend: Backend,
    canary: ResourceSet,
    production: ResourceSet | null,
    agent: string | null,
    entry: Served,
  ): Promise<string> {
    const rt = this.rt;
    const ids = modelWeightIds(rt.config, canary, backend.name);
    if (production && ids.join() === modelWeightIds(rt.config, production, backend.name).join())
      return this.setModels.production(backend, production, agent);
    const own = agent ? canary.members.agents[agent]?.weights : undefined;
    const id = own && ids.includes(own) ? own : ids.length === 1 ? ids[0] : undefined;
    if (!id)
      throw new Error(
        `its agents of models.${backend.name} get different weights, and the request names none of them `
          + '(X-Agent-Id, or a session URL naming the agent)',
      );
    if (production && agent && production.members.agents[agent]?.weights === id)
      return this.setModels.production(backend, production, agent);
    const w = rt.store().resources.get(id)!;
    const m = rt.config.models[backend.name]!;
    let lora: string;
    let targets: VllmTarget[];
    if (m.local) {
      const primary = production && rt.servingPlan(backend.name, production)?.primary;
      if (primary?.id === w.id) return backend.model;
      if (!w.metadata.adapter || !w.path)
        throw new Error(`${w.name} v${w.version} is not a LoRA adapter the local server can load beside production`);
      lora = loraName(w.name, w.version);
      targets = backend.baseUrls.map((baseUrl) => ({ baseUrl }));
    } else {
      lora = servedAdapterName(backend.name, m, w);
      targets = adapterTargets(m, rt.apiKey(backend.name));
    }
    for (const t of targets) {
      const r = await ensureAdapter(t, lora, w.path!);
      if (!r.ok) throw new Error(`could not load ${lora}: ${r.detail}`);
    }
    entry.loaded = { lora, weightId: w.id, model: backend.name, targets };
    return lora;
  }
}
