import type { Store } from '../store/index.js';
import type { Rollout } from '../trace/records.js';

/** The weights a training run starts from: its weight resource when on record, and its folder. */
export interface StartWeights {
  resourceId: string | null;
  dir: string;
}

/** on: the agent's calls were served by the start weights; off: by other weights; unknown: not on record. */
export type PolicyMatch = 'on' | 'off' | 'unknown';
export type PolicyCheck = (rollout: Rollout, agent: string | null) => PolicyMatch;

/**
 * Which weights served an agent in a rollout, from the rollout's resource set (the weight resource each
 * agent's model was served with). A weight resource matches the start by id or by folder: a builtin model
 * or folder may be on record under more than one resource. Rollouts without a resource set, agents the set
 * does not name and models served elsewhere (no weight resource) are unknown.
 */
export function policyCheck(store: Store, start: StartWeights): PolicyCheck {
  const sets = new Map<string, Record<string, string | null> | null>();
  const matches = new Map<string, boolean>();
  const isStart = (weightId: string): boolean => {
    let m = matches.get(weightId);
    if (m === undefined) {
      m = weightId === start.resourceId || store.resources.get(weightId)?.path === start.dir;
      matches.set(weightId, m);
    }
    return m;
  };
  return (rollout, agent) => {
    const setId = rollout.resourceSetId;
    if (!setId || agent === null) return 'unknown';
    let weights = sets.get(setId);
    if (weights === undefined) {
      const set = store.sets.get(setId);
      weights = set
        ? Object.fromEntries(Object.entries(set.members.agents).map(([id, member]) => [id, member.weights]))
        : null;
      sets.set(setId, weights);
    }
    const id = weights?.[agent];
    if (!id) return 'unknown';
    return isStart(id) ? 'on' : 'off';
  };
}
