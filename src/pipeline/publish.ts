import path from 'node:path';
import { PRODUCTION_FILE } from '../resources/production.js';
import type { Runtime } from '../runtime/runtime.js';
import { ensureAdapter, loraCall, loraName, type LoraCall } from '../serving/vllm-lora.js';
import type { Resource, ResourceSet } from '../store/index.js';

export interface Published {
  /** `<data_dir>/production.json`, rewritten with the switch. */
  productionFile: string;
  /** Adapter loads and unloads on remote LoRA-serving models (models.*.lora). */
  vllm: (LoraCall & { server: string; model: string })[];
}

/**
 * After production changed, the servers outside massgen-rl follow: on each remote model that serves a
 * line's adapters, the new adapter is loaded (if evaluation had not already) before the previous one is
 * unloaded, so requests never miss.
 */
export async function publish(rt: Runtime, next: ResourceSet, previous: ResourceSet, _opts: { exportMassgen?: string }): Promise<Published> {
  const out: Published = { productionFile: path.join(rt.paths.dataDir, PRODUCTION_FILE), vllm: [] };
  for (const [name, model] of Object.entries(rt.config.models)) {
    if (!model.lora?.load_adapters || !model.base_url) continue;
    const [now, before] = [adapterOf(rt, next, name), adapterOf(rt, previous, name)];
    const server = { baseUrl: model.base_url, apiKey: rt.apiKey(name) };
    const tag = { server: model.base_url, model: name };
    if (now && now.id !== before?.id) out.vllm.push({ ...tag, ...await ensureAdapter(server, loraName(now.name, now.version), now.path!) });
    if (before && before.id !== now?.id && (!now || out.vllm.at(-1)?.ok)) out.vllm.push({ ...tag, ...await loraCall(server, 'unload', loraName(before.name, before.version)) });
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
