import type { RLConfig } from '../../config/schema.js';
import { UserError } from '../../errors.js';
import type { Component } from '../../prompt-opt/index.js';
import { withPrompt } from '../../resources/sets.js';
import type { Resource, ResourceSet, Store } from '../../store/index.js';

/** The prompts optimized together (prompt_opt.prompts, else every agent's system prompt and the presenter's) with the agents each serves. */
export function components(config: RLConfig, prompts = config.prompt_opt.prompts): Component[] {
  const presenter = config.orchestrator.presenter_prompt;
  const inUse = [...new Set([...config.agents.map((a) => a.system_prompt), ...(presenter ? [presenter] : [])])];
  const names = prompts ?? inUse;
  return names.map((name, i) => {
    if (!inUse.includes(name))
      throw new UserError(
        `prompt_opt.prompts[${i}]: prompt "${name}" is the system prompt of no agent${presenter ? ' and not orchestrator.presenter_prompt' : ''}; prompts in use: ${inUse.join(', ')}`,
      );
    return {
      name,
      agents: config.agents.filter((a) => a.system_prompt === name).map((a) => a.id),
      presenter: name === presenter,
    };
  });
}

/** The prompt resource id a set serves for a component. */
export function servedPrompt(set: ResourceSet, c: Component): string {
  const presenter = set.members.presenter;
  const id = c.agents.length ? set.members.agents[c.agents[0]!]?.prompt : presenter;
  if (!id) throw new Error(`resource set v${set.version} serves no prompt for ${c.name}`);
  return id;
}

export interface CandidateInput {
  runId: string;
  candidateId: string;
  /** Prompt resource id per component of the parent (first parent for a merge). */
  parentPrompts: Record<string, string>;
  /** The new text per component (unchanged components keep their parent's resource). */
  texts: Record<string, string>;
  critique: string | null;
  edited: string | null;
  parents: string[];
}

/**
 * A candidate as resources: a new prompt version for each changed component (its parent the version it
 * was derived from, the critique and the run in its metadata) and the set serving them on top of base.
 */
export function materialize(
  store: Store,
  config: RLConfig,
  base: ResourceSet,
  cs: readonly Component[],
  c: CandidateInput,
): { set: ResourceSet; prompts: Record<string, string> } {
  return store.transaction(() => {
    let members = base.members;
    const prompts: Record<string, string> = {};
    const changed: string[] = [];
    for (const comp of cs) {
      const parent = store.resources.get(c.parentPrompts[comp.name]!)!;
      const text = c.texts[comp.name]!;
      // The same text already has a version (a merge takes the other parent's): that one serves.
      let r: Resource | undefined =
        text === parent.content
          ? parent
          : store.resources.list('prompt').find((x) => x.name === comp.name && x.content === text);
      if (!r) {
        r = store.resources.add({
          kind: 'prompt',
          name: comp.name,
          content: text,
          parentId: parent.id,
          metadata: {
            source: 'apo',
            apo_run: c.runId,
            apo_candidate: c.candidateId,
            parents: c.parents,
            edited: c.edited === comp.name,
            critique: c.critique,
          },
        });
      }
      prompts[comp.name] = r!.id;
      if (r!.id === servedPrompt(base, comp)) continue;
      changed.push(r!.id);
      members = withPrompt(members, config, r!);
    }
    const set = store.sets.add(
      members,
      { kind: 'prompt', apo_run: c.runId, apo_candidate: c.candidateId, prompt_ids: changed },
      base.id,
    );
    return { set, prompts };
  });
}
