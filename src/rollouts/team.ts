import { UserError } from '../errors.js';
import type { Embedder } from '../llm/embeddings.js';
import type { LlmClient } from '../llm/types.js';
import type { TeamAgent } from '../orchestrator/types.js';
import { checkPromptFiles } from '../resources/prompts.js';
import { resourceRef } from '../resources/weights.js';
import type { Judge, Runtime } from '../runtime/runtime.js';
import { adapterTargets, ensureAdapter, servedAdapterName } from '../serving/vllm-lora.js';
import type { Resource, ResourceSet, Store } from '../store/index.js';
import { toolDefinition } from '../tools/runner.js';
import { TeamPolicies, type DecisionMode } from './team-policies.js';

export interface TeamSetup {
  team: TeamAgent[];
  judge?: Judge;
  /** The resource set serving the team, recorded on every rollout. */
  set: ResourceSet;
  /** Prompt resource id per agent, recorded on every rollout. */
  promptVersions: Record<string, string>;
  /** Weight resource id per agent (null: a model served elsewhere). */
  weightVersions: Record<string, string | null>;
  /** The set's presenter prompt (resource id, recorded on every rollout, and its text): the winner presents with it. */
  presenter?: { id: string; prompt: string };
  /** The set's orchestration policies (and bootstrap exploration), when any decision has one. */
  policies?: TeamPolicies;
  /** The task embedder of the policies' features (policies.embedding_model). */
  embedder?: Embedder;
}

/** What can be checked before anything is written: every model's API key and local weights, and every prompt file. */
export function checkTeamInputs(rt: Runtime): void {
  for (const name of rt.modelsInUse()) rt.checkModel(name);
  checkPromptFiles(rt.config.prompts, rt.paths.baseDir);
}

/**
 * The team a resource set serves: each agent's prompt version, and its model's client on the set's
 * weights (a local server per distinct weights, started or shared through the runtime).
 */
export async function setupTeam(rt: Runtime, set: ResourceSet, mode: DecisionMode = 'collect'): Promise<TeamSetup> {
  const { config } = rt;
  const store = rt.store();
  checkTeamInputs(rt);
  const member = (id: string) => {
    const m = set.members.agents[id];
    if (!m) throw new Error(`resource set v${set.version} has no member for agent ${id}`);
    return m;
  };
  const clients = new Map<string, LlmClient>();
  const served = new Map<string, string>();
  await Promise.all(
    config.agents.map(async (a) => {
      const model = rt.model(a.model);
      const w = member(a.id).weights;
      const weight = w ? store.resources.get(w) : undefined;
      if (weight && !model.local) served.set(a.id, await remoteAdapter(rt, a.model, weight));
      clients.set(a.id, await rt.client(a.model, weight && model.local ? { weights: resourceRef(weight) } : {}));
    }),
  );
  const judge = await rt.judge();
  const team: TeamAgent[] = config.agents.map((a, i) => ({
    id: a.id,
    label: `agent${i + 1}`,
    model: served.get(a.id) ?? rt.model(a.model).model,
    systemPrompt: store.resources.get(member(a.id).prompt)?.content ?? '',
    temperature: a.temperature,
    maxTokens: a.max_tokens,
    toolMode: a.tool_mode,
    implicitAnswer: a.implicit_answer,
    tools: a.tools.map((t) => toolDefinition(t, config.tools)),
    client: clients.get(a.id)!,
    samples: config.collect.samples_per_turn,
  }));
  const promptVersions = Object.fromEntries(config.agents.map((a) => [a.id, member(a.id).prompt]));
  const weightVersions = Object.fromEntries(config.agents.map((a) => [a.id, member(a.id).weights]));
  const presenter = presenterOf(store, set);
  const policies = TeamPolicies.forSet(store, config.policies, set, mode);
  const decides = (['routing', 'stop', 'tool', 'delegate'] as const).some((k) => policies.active(k));
  return {
    team,
    judge,
    set,
    promptVersions,
    weightVersions,
    ...(presenter ? { presenter } : {}),
    ...(decides ? { policies, embedder: await rt.embedder() } : {}),
  };
}

/** The set's presenter prompt, whatever the config says now: a set is measured and served as it is. */
function presenterOf(store: Store, set: ResourceSet): TeamSetup['presenter'] {
  const id = set.members.presenter;
  if (id === undefined) return undefined;
  const prompt = store.resources.get(id);
  if (!prompt) throw new Error(`resource set v${set.version}: its presenter prompt ${id} is missing from the store`);
  return { id, prompt: prompt.content ?? '' };
}

/**
 * The model name an agent of a remote LoRA-serving model (models.*.lora) sends for an adapter of the
 * set: the adapter, loaded on the server first when the config says massgen-rl manages its adapters.
 */
async function remoteAdapter(rt: Runtime, modelName: string, weight: Resource): Promise<string> {
  const model = rt.model(modelName);
  const name = servedAdapterName(modelName, model, weight);
  // Every replica serves every request's model name, so each loads the adapter.
  for (const target of adapterTargets(model, rt.apiKey(modelName))) {
    const r = await ensureAdapter(target, name, weight.path!);
    if (!r.ok) throw new UserError(`could not load adapter ${name} on models.${modelName}: ${r.detail}`);
  }
  return name;
}

/** Evaluations ask each decision once: extra samples are for training, not for measuring. */
export function onePerDecision(setup: TeamSetup): TeamSetup {
  return { ...setup, team: setup.team.map((a) => ({ ...a, samples: 1 })) };
}
