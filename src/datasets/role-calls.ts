import type { PolicyKind, RolesConfig } from '../config/schema.js';
import { nestedDepth } from '../trace/payloads.js';
import type { TraceSpan } from './read-traces.js';

/** Where a call stands: its agent, and whether it is the team's presentation or a delegated sub-task's call. */
export interface CallSite {
  agent: string | null;
  presentation: boolean;
  delegated: boolean;
}

/**
 * Which role each call is (config `roles`): a delegated sub-task's call is the role with `delegate: true`,
 * else its agent's role; the presentation is the role with `presenter: true`, else the presenting agent's
 * role; every other call is its agent's role. A policy decision is the role that lists its kind. Calls of
 * agents in no role are no role's (null). The config rules make every claim unique.
 */
export class RoleMap {
  readonly names: string[];
  private readonly byAgent = new Map<string, string>();
  private readonly byPolicy = new Map<PolicyKind, string>();
  private readonly presenter: string | null = null;
  private readonly delegate: string | null = null;

  constructor(roles: RolesConfig) {
    this.names = Object.keys(roles);
    for (const [name, r] of Object.entries(roles)) {
      for (const id of r.agents) this.byAgent.set(id, name);
      for (const kind of r.policies) this.byPolicy.set(kind, name);
      if (r.presenter) this.presenter = name;
      if (r.delegate) this.delegate = name;
    }
  }

  ownerOf(site: CallSite): string | null {
    if (site.delegated && this.delegate !== null) return this.delegate;
    if (site.presentation && !site.delegated && this.presenter !== null) return this.presenter;
    return site.agent === null ? null : (this.byAgent.get(site.agent) ?? null);
  }

  ownerOfDecision(kind: string): string | null {
    return this.byPolicy.get(kind as PolicyKind) ?? null;
  }
}

/** The call site of a prompt or coordination span (a child orchestration's payloads carry its depth). */
export function spanSite(s: TraceSpan): CallSite {
  return {
    agent: s.agent,
    presentation: s.name === 'presentation',
    delegated: s.payload.includes('"delegate_seq"') && nestedDepth(JSON.parse(s.payload)) > 0,
  };
}
