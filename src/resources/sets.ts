import type { RLConfig } from '../config/schema.js';
import { UserError } from '../errors.js';
import type { Resource, ResourceSet, SetMember, SetMembers, SetOrigin, Store } from '../store/index.js';
import { refName } from './checkpoints.js';
import { configPrompts } from './prompts.js';
import type { ResolvedWeights } from './weights.js';

/** What set resolution needs from the run: the store, the config and a weights resolver. */
export interface SetContext {
  store: Store;
  config: RLConfig;
  baseDir: string;
  weights(ref: string, where: string): ResolvedWeights;
}

/**
 * What the config implies for every agent now: its prompt's config version, and for a model with
 * `local` weights the weight resource of its configured weights (a base model or folder not yet on
 * record is recorded as a weight resource); null for a model served elsewhere. With
 * orchestrator.presenter_prompt, the presenter: that prompt's config version, following the config.
 */
/** The distinct weight resources (ids, sorted) a set gives the agents of config model `model`. */
export function modelWeightIds(config: RLConfig, set: ResourceSet, model: string): string[] {
  const ids = config.agents
    .filter((a) => a.model === model)
    .map((a) => set.members.agents[a.id]?.weights)
    .filter((id): id is string => Boolean(id));
  return [...new Set(ids)].sort();
}

export function configMembers(ctx: SetContext): SetMembers {
  const prompts = configPrompts(ctx.config.prompts, ctx.baseDir, ctx.store);
  const agents: Record<string, SetMember> = {};
  for (const a of ctx.config.agents) {
    const model = ctx.config.models[a.model]!;
    const weights = model.local
      ? weightResource(ctx.store, ctx.weights(model.local.weights, `models.${a.model}.local.weights`)).id
      : null;
    agents[a.id] = { prompt: prompts.get(a.system_prompt)!.id, weights, from_config: { prompt: true, weights: true } };
  }
  const presenter = ctx.config.orchestrator.presenter_prompt;
  return withPresenter(
    { agents },
    presenter === undefined ? undefined : { prompt: prompts.get(presenter)!.id, fromConfig: true },
  );
}

/** The weight resource behind resolved weights, recording a builtin model or a folder the first time it is used. */
export function weightResource(store: Store, w: ResolvedWeights): Resource {
  if (w.resource) return store.resources.get(w.resource.id)!;
  const known = store.resources
    .list('weight')
    .filter((r) => r.path === w.dir)
    .at(-1);
  return (
    known
    ?? store.resources.add({
      kind: 'weight',
      name: refName(w.ref),
      path: w.dir,
      metadata: { source: 'config', ref: w.ref, adapter: w.adapter, base_path: w.baseDir ?? null },
    })
  );
}

/**
 * Production brought up to date with the config: agents the set lacks take the config's members, and a
 * member that still follows the config takes the config's current prompt or weights (a deployed one stays).
 * The presenter likewise; a config without presenter_prompt drops it (the winner presents with its own prompt).
 */
export function reconcile(current: SetMembers | undefined, implied: SetMembers): SetMembers {
  const agents: Record<string, SetMember> = {};
  for (const [id, c] of Object.entries(implied.agents)) {
    const s = current?.agents[id];
    agents[id] = !s
      ? c
      : {
          prompt: s.from_config.prompt ? c.prompt : s.prompt,
          weights: s.from_config.weights ? c.weights : s.weights,
          from_config: s.from_config,
        };
  }
  const deployed = current && presenterOf(current);
  const presenter =
    implied.presenter === undefined ? undefined : deployed && !deployed.fromConfig ? deployed : presenterOf(implied);
  return withPresenter(withPolicies({ agents }, current?.policies), presenter);
}

/** The set's presenter prompt and whether it follows the config (only a set made from the config says so). */
export function presenterOf(members: SetMembers): { prompt: string; fromConfig: boolean } | undefined {
  return members.presenter === undefined
    ? undefined
    : { prompt: members.presenter, fromConfig: members.presenter_from_config === true };
}

/** Members with this presenter (none: both keys left out, so a set without one hashes as before). */
export function withPresenter(
  members: SetMembers,
  presenter: { prompt: string; fromConfig: boolean } | undefined,
): SetMembers {
  const { presenter: _p, presenter_from_config: _f, ...rest } = members;
  return presenter ? { ...rest, presenter: presenter.prompt, presenter_from_config: presenter.fromConfig } : rest;
}

/** Members with these policies (none: the key is left out, so a set without policies hashes as before). */
export function withPolicies(members: SetMembers, policies: Record<string, string> | undefined): SetMembers {
  const { policies: _drop, ...rest } = members;
  return policies && Object.keys(policies).length ? { ...rest, policies } : rest;
}

/** A candidate: the base set with a policy resource for its decision (a policy's name is its kind). */
export function withPolicy(base: SetMembers, policy: Resource): SetMembers {
  return withPolicies(base, { ...base.policies, [policy.name]: policy.id });
}

/**
 * A candidate: the base set with the agents that serve the weights' line switched to them: agents whose
 * weights are of that line, and agents of a remote model that serves that line's adapters (models.*.lora).
 */
export function withWeights(base: SetMembers, store: Store, weight: Resource, config: RLConfig): SetMembers {
  const line = (id: string | null) => (id ? store.resources.get(id)?.name : undefined);
  const loraLine = (agent: string) => {
    const model = config.agents.find((a) => a.id === agent)?.model;
    return model ? config.models[model]?.lora?.line : undefined;
  };
  const served = Object.entries(base.agents).filter(([id, m]) =>
    m.weights ? line(m.weights) === weight.name : loraLine(id) === weight.name,
  );
  if (!served.length) {
    const lines = [
      ...new Set(
        Object.values(base.agents)
          .map((m) => line(m.weights))
          .filter(Boolean),
      ),
    ];
    throw new UserError(
      `weights ${weight.name} v${weight.version} belong to line "${weight.name}", which no agent serves${lines.length ? ` (agents serve: ${lines.join(', ')})` : ' (no agent has local weights)'}`,
    );
  }
  return replace(
    base,
    served.map(([id]) => id),
    (m) => ({ ...m, weights: weight.id, from_config: { ...m.from_config, weights: false } }),
  );
}

/** A candidate: the base set with these agents (a role's) on this weight resource, whatever line they served. */
export function withAgentWeights(base: SetMembers, agents: readonly string[], weightId: string): SetMembers {
  return replace(
    base,
    agents.filter((id) => base.agents[id]),
    (m) => ({ ...m, weights: weightId, from_config: { ...m.from_config, weights: false } }),
  );
}

/**
 * A candidate: the base set with this prompt version serving every agent whose system prompt it is, and
 * the presenter when it is orchestrator.presenter_prompt (a prompt that is both swaps both).
 */
export function withPrompt(base: SetMembers, config: RLConfig, prompt: Resource): SetMembers {
  const ids = config.agents.filter((a) => a.system_prompt === prompt.name).map((a) => a.id);
  const presenter = config.orchestrator.presenter_prompt;
  const presents = prompt.name === presenter;
  if (!ids.length && !presents) {
    const inUse = [...new Set(config.agents.map((a) => a.system_prompt))].join(', ');
    throw new UserError(
      `prompt "${prompt.name}" is neither the system prompt of an agent nor the presenter prompt; prompts in use: ${inUse} (agents' system prompts)${presenter === undefined ? ', and no orchestrator.presenter_prompt is set' : `, ${presenter} (orchestrator.presenter_prompt)`}`,
    );
  }
  const swapped = replace(base, ids, (m) => ({
    ...m,
    prompt: prompt.id,
    from_config: { ...m.from_config, prompt: false },
  }));
  return presents ? withPresenter(swapped, { prompt: prompt.id, fromConfig: false }) : swapped;
}

/** The base set with some agents changed; its policies and presenter kept. */
function replace(base: SetMembers, ids: string[], change: (m: SetMember) => SetMember): SetMembers {
  return withAgents(
    base,
    Object.fromEntries(Object.entries(base.agents).map(([id, m]) => [id, ids.includes(id) ? change(m) : m])),
  );
}

function withAgents(base: SetMembers, agents: Record<string, SetMember>): SetMembers {
  return withPresenter(withPolicies({ agents }, base.policies), presenterOf(base));
}

/**
 * Fills what a set made under an older config lacks (agents, the presenter the config now names), so any
 * stored set can serve today's team; a presenter the set has stays.
 */
export function complete(set: ResourceSet, implied: SetMembers): SetMembers {
  const agents = Object.fromEntries(Object.entries(implied.agents).map(([id, c]) => [id, set.members.agents[id] ?? c]));
  return withPresenter(
    withPolicies({ agents }, set.members.policies),
    presenterOf(set.members) ?? presenterOf(implied),
  );
}

/** The line of describeMembers for the presenter prompt (no agent id can be written so). */
const PRESENTER_LINE = '(presenter)';

/**
 * Where a set's resources came from, one line per agent (for status, resources show and reports), and a
 * line `(presenter)` for the presenter prompt when the set has one (the winner's weights present with it).
 */
export function describeMembers(
  store: Store,
  members: SetMembers,
): { agent: string; prompt: string; weights: string }[] {
  const label = (id: string | null) => {
    if (!id) return '(served elsewhere)';
    const r = store.resources.get(id);
    return r ? `${r.name} v${r.version}` : id;
  };
  const lines = Object.entries(members.agents).map(([agent, m]) => ({
    agent,
    prompt: label(m.prompt),
    weights: label(m.weights),
  }));
  return members.presenter === undefined
    ? lines
    : [...lines, { agent: PRESENTER_LINE, prompt: label(members.presenter), weights: "(the winner's)" }];
}

export type { SetOrigin };
