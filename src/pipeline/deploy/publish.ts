import path from 'node:path';
import { errorMessage } from '../../errors.js';
import { POINTER_REFRESH_MS } from '../../gateway/arms.js';
import { PRODUCTION_FILE } from '../../resources/production-switch.js';
import type { Runtime } from '../../runtime/runtime.js';
import { liveServers } from '../../serving/registry.js';
import { adapterTargets, ensureAdapter, loraCall, loraName, type LoraCall } from '../../serving/vllm-lora.js';
import type { Resource, ResourceSet } from '../../store/index.js';
import { followProduction, type ServerSwap } from './follow-production.js';
import { checkMassgenTargets, massgenTargets, writeMassgen } from './massgen-export.js';

/** A replaced adapter stays loaded this long: past a gateway's pointer refresh, and its requests sent before it. */
const UNLOAD_GRACE_MS = POINTER_REFRESH_MS + 500;

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
  const later: (() => Promise<void>)[] = [];
  for (const entry of liveServers(rt.paths.dataDir)) {
    const swap = await followProduction(rt, entry, next, previous, later);
    if (swap) out.servers.push(swap);
  }
  if (later.length) {
    await new Promise((r) => setTimeout(r, UNLOAD_GRACE_MS));
    for (const unload of later) await unload();
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
