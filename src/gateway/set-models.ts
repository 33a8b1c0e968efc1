import { modelWeightIds } from '../resources/sets.js';
import type { Runtime } from '../runtime/runtime.js';
import { servedAdapterName } from '../serving/vllm-lora.js';
import type { ResourceSet } from '../store/index.js';
import type { Backend } from './backends.js';

/**
 * The model name production's requests carry on each config model. A local model's server follows
 * production's weights itself and is asked for by its own name, or, when production gives the model's agents
 * different adapters (roles), by the agent's own adapter, loaded beside by name (serving/model-plan.ts); a remote
 * model that serves a LoRA line by name (models.*.lora) is asked for the adapter production gives its agents,
 * LINE-vN (deploy loads it there), as collects and evaluations ask for it. Sets never change, so each answer is kept.
 */
export class SetModels {
  private readonly names = new Map<string, string>();

  constructor(private readonly rt: Runtime) {}

  production(backend: Backend, set: ResourceSet | null, agent: string | null = null): string {
    if (!set) return backend.model;
    const key = `${set.id}\0${backend.name}\0${agent ?? ''}`;
    let name = this.names.get(key);
    if (name === undefined) {
      name = this.resolve(backend, set, agent);
      this.names.set(key, name);
    }
    return name;
  }

  private resolve(backend: Backend, set: ResourceSet, agent: string | null): string {
    const m = this.rt.config.models[backend.name]!;
    if (m.local) return (agent && this.rt.servingPlan(backend.name, set)?.agentModel[agent]) || backend.model;
    if (!m.lora) return backend.model;
    const ids = modelWeightIds(this.rt.config, set, backend.name);
    const own = agent ? set.members.agents[agent]?.weights : undefined;
    const id = own && ids.includes(own) ? own : ids.length === 1 ? ids[0] : undefined;
    // agents of one model given different adapters, asked without naming one: the config's model answers
    const w = id ? this.rt.store().resources.get(id) : undefined;
    return w ? servedAdapterName(backend.name, m, w) : backend.model;
  }
}
