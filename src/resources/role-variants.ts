import type { RoleConfig, RolesConfig } from '../config/schema.js';
import type { SetMember, SetMembers } from '../store/index.js';
import { canonicalJson } from '../util/hash.js';

/** What one role owns in a resource set: its agents' members, and optionally the presenter and some policies. */
export interface RoleScope {
  agents: readonly string[];
  presenter?: boolean;
  /** Decision kinds (routing, stop, tool, delegate) whose policy belongs to the role. */
  policies?: readonly string[];
}

/** A role's part of a set, from its config (`roles.<name>`). */
export function roleScope(r: Pick<RoleConfig, 'agents' | 'presenter' | 'policies'>): RoleScope {
  return { agents: r.agents, presenter: r.presenter, policies: r.policies };
}

/** Each role's part of a set, from config `roles`. */
export function roleScopes(roles: RolesConfig): Record<string, RoleScope> {
  return Object.fromEntries(Object.entries(roles).map(([name, r]) => [name, roleScope(r)]));
}

const same = (a: unknown, b: unknown) => canonicalJson(a ?? null) === canonicalJson(b ?? null);

/** What the role's part of a set serves, comparable across sets (a member's from_config flags do not serve). */
function servedPart(members: SetMembers, scope: RoleScope): unknown {
  const agent = (m: SetMember | undefined) => (m ? { prompt: m.prompt, weights: m.weights } : null);
  return {
    agents: scope.agents.map((id) => agent(members.agents[id])),
    presenter: scope.presenter ? (members.presenter ?? null) : null,
    policies: (scope.policies ?? []).map((kind) => members.policies?.[kind] ?? null),
  };
}

/** Whether the candidate serves the role differently from the baseline. */
export function roleChanged(baseline: SetMembers, candidate: SetMembers, scope: RoleScope): boolean {
  return !same(servedPart(baseline, scope), servedPart(candidate, scope));
}

/**
 * The baseline with the candidate's members for every listed role and nothing else: with one role, the
 * leave-one-in variant that measures that role's own effect; with the roles that passed their gates, what a
 * per-role deploy promotes.
 */
export function withRoles(baseline: SetMembers, candidate: SetMembers, scopes: readonly RoleScope[]): SetMembers {
  const agents = { ...baseline.agents };
  let presenter = baseline.presenter;
  let presenterFromConfig = baseline.presenter_from_config;
  const policies = { ...baseline.policies };
  for (const scope of scopes) {
    for (const id of scope.agents) {
      const member = candidate.agents[id];
      if (member) agents[id] = member;
    }
    if (scope.presenter) {
      presenter = candidate.presenter;
      presenterFromConfig = candidate.presenter_from_config;
    }
    for (const kind of scope.policies ?? []) {
      const policy = candidate.policies?.[kind];
      if (policy) policies[kind] = policy;
      else delete policies[kind];
    }
  }
  return {
    agents,
    ...(Object.keys(policies).length ? { policies } : {}),
    ...(presenter ? { presenter, presenter_from_config: presenterFromConfig ?? false } : {}),
  };
}
