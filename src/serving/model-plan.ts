import type { RLConfig } from '../config/schema.js';
import { UserError } from '../errors.js';
import type { Resource, ResourceSet } from '../store/index.js';
import { samePath } from '../util/same-path.js';
import { ensureAdapter, loraName, type LoraCall } from './vllm-lora.js';

/**
 * How one server of a local config model serves a set's weights to that model's agents. Agents of one model
 * may get different weights (roles): the served name gives the primary weights, and every other adapter of the
 * same base is loaded beside it under its own name, LINE-vN, which its agents' requests carry.
 */
export interface ModelPlan {
  /** What the served name (models.<name>.model) gives; the server starts on it. */
  primary: Resource;
  /** The other adapters, loaded beside the primary by name. */
  named: { name: string; weights: Resource }[];
  /** Per agent of the model: the model name its requests carry. */
  agentModel: Record<string, string>;
}

/**
 * The plan for config model `model` in `set`, or undefined when the set gives its agents no weights. The primary is
 * the one full model among the weights when there is one (an adapter cannot be asked for without the served name),
 * else the first agent's weights. A UserError when one server cannot serve them all: two full models, or adapters of
 * another base.
 */
export function modelPlan(
  config: RLConfig,
  set: ResourceSet,
  model: string,
  resource: (id: string) => Resource | undefined,
): ModelPlan | undefined {
  const agents = config.agents.filter((a) => a.model === model && set.members.agents[a.id]?.weights);
  if (!agents.length) return undefined;
  const weightsOf = new Map<string, Resource>();
  for (const a of agents) {
    const id = set.members.agents[a.id]!.weights!;
    const w = resource(id);
    if (!w) throw new Error(`resource set v${set.version}: weights ${id} of agent ${a.id} are missing from the store`);
    weightsOf.set(a.id, w);
  }
  const distinct = [...new Map([...weightsOf.values()].map((w) => [w.id, w])).values()];
  const full = distinct.filter((w) => !w.metadata.adapter);
  const label = (w: Resource) => `${w.name} v${w.version}`;
  if (full.length > 1)
    throw new UserError(
      `set v${set.version} gives the agents of models.${model} two full models (${full.map(label).join(', ')}); `
        + 'one server serves one model and adapters of it',
      `give the agents of one of them their own model (models.<name> with its own local.port)`,
    );
  const primary = full[0] ?? weightsOf.get(agents[0]!.id)!;
  const base = primary.metadata.adapter ? String(primary.metadata.base_path ?? '') : (primary.path ?? '');
  const named = distinct
    .filter((w) => w.id !== primary.id)
    .map((w) => {
      const of = String(w.metadata.base_path ?? '');
      if (!w.path || (base && of && !samePath(base, of)))
        throw new UserError(
          `set v${set.version} gives agents of models.${model} ${label(w)}, which is not an adapter of ${base || label(primary)}`
            + ` (the base of ${label(primary)}); one server serves one base model and its adapters`,
        );
      return { name: loraName(w.name, w.version), weights: w };
    });
  const servedName = config.models[model]!.model;
  const agentModel = Object.fromEntries(
    agents.map((a) => {
      const w = weightsOf.get(a.id)!;
      return [a.id, w.id === primary.id ? servedName : loraName(w.name, w.version)];
    }),
  );
  return { primary, named, agentModel };
}

/** The plan's named adapters that `before` did not load (to load) and that `after` no longer loads (to unload). */
export function planChanges(
  before: ModelPlan | undefined,
  after: ModelPlan,
): { load: ModelPlan['named']; unload: string[] } {
  const had = new Set((before?.named ?? []).map((n) => n.name));
  const has = new Set(after.named.map((n) => n.name));
  return {
    load: after.named.filter((n) => !had.has(n.name)),
    unload: [...had].filter((n) => !has.has(n)),
  };
}

/** Loads the plan's named adapters on a running server (one already loaded is kept); the calls, failed or not. */
export async function loadNamed(baseUrl: string, named: ModelPlan['named']): Promise<LoraCall[]> {
  const calls: LoraCall[] = [];
  for (const n of named) calls.push(await ensureAdapter({ baseUrl }, n.name, n.weights.path!));
  return calls;
}
