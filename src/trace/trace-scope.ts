/**
 * One orchestration inside an orchestration trace: the team's own (depth 0), or a child orchestration
 * that a delegation opened (trace/payloads.ts). Each keeps its own round, agent lifetimes, standing votes
 * and answers, so a child running beside its parent's other agents does not mix with them.
 */
export class TraceScope {
  /** Agents active in the current round → the end time (ms) of their latest span. */
  readonly active = new Map<string, number>();
  roundEvent: string | null = null;
  roundSeq = 0;
  readonly latestAnswer = new Map<string, string>();
  standingVotes: string[] = [];
  /** The votes a new answer superseded: standing again when a stop policy ends the round there. */
  supersededVotes: string[] = [];
  /** Agent → the event standing for its latest input (a prompt's response, a context message). */
  readonly latestInput = new Map<string, string>();
  selectionEvent: string | null = null;
  /** The presentation event: what a child orchestration returns. */
  presentationEvent: string | null = null;
  /** The delegation's spawn events, linked to the child's first round. */
  readonly spawnedBy: string[] = [];
  /** Delegating agent → its delegate_return event, linked to the delegate tool result it gets. */
  readonly pendingReturns = new Map<string, string>();
  /** Fields every event of a child orchestration carries: its depth and the delegation's event id. */
  readonly tags: { depth?: number; scope?: string };

  /** `key`: the delegate span's seq (0 for the team's own). */
  constructor(
    readonly key: number,
    readonly depth: number,
  ) {
    this.tags = depth ? { depth, scope: `e${key}` } : {};
  }

  /** How an agent (or the orchestrator) of this orchestration is named in events: `a`, or `a@d1` in a child at depth 1. */
  name(agent: string): string {
    return this.depth ? `${agent}@d${this.depth}` : agent;
  }

  /** The despawn event id of an agent: child scopes add their own id, as two children may name agents alike. */
  despawnId(seq: number, agent: string): string {
    return `d${seq}.${this.name(agent)}${this.depth ? `.${this.tags.scope}` : ''}`;
  }
}
