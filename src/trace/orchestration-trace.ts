/**
 * One rollout as an orchestration trace: the open JSON schema for replayable LLM multi-agent
 * orchestration traces (xxzcc/awesome-llm-mas-rl, trace-schema/trace_schema.json; a copy is in
 * test/fixtures/orchestration-trace.schema.json). Pure: rollout + spans + rewards in, a plain object out.
 *
 * Events (id e<seq>, or e<seq>.<part> when a span yields several; spawn/despawn s<seq>.<agent>/d<seq>.<agent>):
 *   round                     orchestrator_decision {decision: round, round, trigger, answer_labels}
 *   (agent activity per round) spawn before an agent's first span in a round, despawn after its last
 *                             (a new round, the final selection, a cancel or drop of that agent, or the end)
 *   prompt                    message e<seq>.req (agent → model, the request) and e<seq>.res (model → agent,
 *                             the response; absent when there was none), with tokens and finish_reason
 *                             (and ttft_s, the time to first token, for a streamed call)
 *   tool                      tool_call e<seq>.call and tool_result e<seq>.result (success)
 *   message (context, update) message orchestrator → agent (role: the payload's kind or the span name)
 *   new_answer                return (role answer, label, round)
 *   vote                      aggregate (role vote, to: the voted-for agent, label: its label)
 *   invalid_action            safety_event (kind)
 *   cancel, drop, restart     orchestrator_decision (decision: the span name; to: the agent concerned)
 *   final_selection           aggregate e<seq>.tally (the vote count) and orchestrator_decision e<seq>
 *                             (decision final_selection, to: the winner)
 *   presentation              message winner → user (role presentation)
 *   other coordination spans  orchestrator_decision (decision: the span name); reward spans are left
 *                             out (rewards are summed per channel instead)
 * Edges: temporal between consecutive events; causal from the span named by an action's prompt_seq
 * (a prompt's response, or a context message) to the action, and from a prompt's request to its response;
 * spawn from the round decision to each spawn; tool_dependency from a call to its result (and causal
 * from the prompt a tool span nests under to the call); aggregate from each standing vote (cast since
 * the last new answer) to the tally, causal from the tally to the selection; return from each agent's
 * latest answer to the selection; message from the selection to the presentation; safety_flow from the
 * agent's latest prompt or context to an invalid action.
 * Delegation (trace/payloads.ts): the spans of a child orchestration (marked {depth, delegate_seq}) map
 * as above within their own scope (rounds, lifetimes, votes), their agents named <agent>@d<depth>
 * (the orchestrator orchestrator@d<depth>) and every event of theirs tagged depth and scope (the id of
 * the delegation's delegate event); their presentation goes to orchestrator@d<depth>, not the user.
 *   delegate                  spawn e<seq>.<agent>@d<depth> per child agent (role delegation, from the
 *                             delegating agent, to the child agent; shape), spawn edges from the reply
 *                             that called the tool, and from each to the child's first round
 *   delegate_return           return (role delegate_return, from the child's winner, to the delegating
 *                             agent; status, stopped, rounds, tokens): a return edge from the child's
 *                             presentation (or selection), and one to the delegate tool's result
 *   delegate_aggregate        aggregate (role delegate_aggregate, uses: return event → use): an
 *                             aggregate edge from each returned answer used (use > 0), a causal
 *                             edge from the level's presentation
 * Metrics count the team's own spans; delegations and delegation_depth are added when there are any.
 * Text never leaves: content_ref is "sha256:<hex>" of the text (objects: of their canonical JSON).
 * t is seconds since the rollout started (clamped at 0). Topology: hierarchical with a delegation;
 * else debate when two or more agents answer or vote and no tool was called; mixed otherwise.
 */
import { dict } from '../util/dict.js';
import { canonicalJson, sha256 } from '../util/hash.js';
import { nestedDepth } from './payloads.js';
import type { Reward, Rollout, Span } from './records.js';
import { TraceScope } from './trace-scope.js';

export type OrchestrationEventType =
  | 'orchestrator_decision'
  | 'spawn'
  | 'despawn'
  | 'message'
  | 'tool_call'
  | 'tool_result'
  | 'return'
  | 'aggregate'
  | 'human_intervention'
  | 'safety_event';
export type OrchestrationEdgeType =
  'temporal' | 'causal' | 'spawn' | 'message' | 'tool_dependency' | 'return' | 'aggregate' | 'safety_flow';

export interface OrchestrationEvent {
  id: string;
  t: number;
  type: OrchestrationEventType;
  agent: string;
  role?: string;
  from?: string;
  to?: string;
  tool?: string;
  content_ref?: string;
  trusted?: boolean;
  /** The span this event comes from (absent for none). */
  seq?: number;
  [extra: string]: unknown;
}

export interface OrchestrationEdge {
  src: string;
  dst: string;
  type: OrchestrationEdgeType;
}

export interface OrchestrationTrace {
  trace_id: string;
  task_id: string;
  system: string;
  topology: 'debate' | 'mixed' | 'hierarchical';
  events: OrchestrationEvent[];
  edges: OrchestrationEdge[];
  rewards: Record<string, number>;
  costs: { tokens: number; wall_clock_s: number; tool_calls: number; messages: number };
  metrics: Record<string, number>;
}

export const ORCHESTRATOR = 'orchestrator';

type P = Record<string, unknown>;
const obj = (v: unknown): P => (v && typeof v === 'object' && !Array.isArray(v) ? (v as P) : {});
const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

export function contentRef(content: unknown): string {
  return `sha256:${sha256(typeof content === 'string' ? content : canonicalJson(content ?? null))}`;
}

export function toOrchestrationTrace(
  rollout: Rollout,
  spans: readonly Span[],
  rewards: readonly Reward[],
): OrchestrationTrace {
  return new Builder(rollout, spans).build(rewards);
}

class Builder {
  private readonly events: OrchestrationEvent[] = [];
  private readonly ids = new Set<string>();
  private readonly edges: OrchestrationEdge[] = [];
  private readonly sorted: Span[];
  private readonly t0: number;
  /** span seq → the event that stands for its output (a prompt's response, a message). */
  private readonly outputOf = new Map<number, string>();
  private readonly spanTypes = new Map<number, string>();
  private readonly root = new TraceScope(0, 0);
  /** Child orchestrations by the seq of the delegate span that opened them, in order. */
  private readonly scopes = new Map<number, TraceScope>();

  constructor(
    private readonly rollout: Rollout,
    spans: readonly Span[],
  ) {
    this.sorted = [...spans].sort((a, b) => a.seq - b.seq);
    this.t0 = this.sorted.reduce(
      (min, s) => (Number.isFinite(s.startedAt) ? Math.min(min, s.startedAt) : min),
      rollout.startedAt,
    );
    for (const s of this.sorted) this.spanTypes.set(s.seq, s.type);
  }

  build(rewards: readonly Reward[]): OrchestrationTrace {
    for (const s of this.sorted) this.span(s);
    for (const scope of [this.root, ...this.scopes.values()]) this.despawnAll(scope);
    if (!this.events.length) {
      this.add({
        id: 'start',
        t: 0,
        type: 'orchestrator_decision',
        agent: ORCHESTRATOR,
        decision: 'start',
        status: this.rollout.status,
      });
    }
    // Temporal edges first (in event order), then the structural ones in the order they were found.
    const temporal = this.events
      .slice(1)
      .map((e, i): OrchestrationEdge => ({ src: this.events[i]!.id, dst: e.id, type: 'temporal' }));
    const edges = [...temporal, ...this.edges];

    const r = this.rollout;
    const promptTokens = this.sorted
      .filter((s) => s.type === 'prompt')
      .reduce((n, s) => n + (num(obj(obj(s.payload).usage).total_tokens) ?? 0), 0);
    const lastEnd = this.sorted.reduce((max, s) => Math.max(max, s.startedAt + Math.max(0, s.durationMs)), this.t0);
    // The team's own spans: child orchestrations are counted apart (delegations).
    const own = this.sorted.filter((s) => nestedDepth(s.payload) === 0);
    const agents = new Set(own.filter((s) => s.agent).map((s) => s.agent!));
    const debaters = new Set(own.filter((s) => s.name === 'new_answer' || s.name === 'vote').map((s) => s.agent ?? ''));
    const hasTools = this.sorted.some((s) => s.type === 'tool');
    const selection = own.find((s) => s.name === 'final_selection');
    const delegations = this.sorted.filter((s) => s.type === 'coordination' && s.name === 'delegate');

    const metrics: Record<string, number> = {
      agents: agents.size,
      rounds: own.filter((s) => s.name === 'round').length,
      answers: own.filter((s) => s.name === 'new_answer').length,
      votes: own.filter((s) => s.name === 'vote').length,
      completed: r.status === 'completed' && r.finalAnswer !== null ? 1 : 0,
    };
    if (selection) metrics.consensus = obj(selection.payload).consensus === true ? 1 : 0;
    if (r.totalReward !== null && Number.isFinite(r.totalReward)) metrics.total_reward = r.totalReward;
    if (delegations.length) {
      metrics.delegations = delegations.length;
      metrics.delegation_depth = Math.max(...delegations.map((s) => num(obj(s.payload).child_depth) ?? 1));
    }

    return {
      trace_id: r.id,
      task_id:
        r.taskId
        ?? (str(r.metadata.original_task)
          ? `task:${contentRef(r.metadata.original_task).slice(7, 23)}`
          : `rollout:${r.id}`),
      system: r.source === 'massgen-import' ? 'massgen' : 'massgen-rl',
      topology: delegations.length ? 'hierarchical' : debaters.size >= 2 && !hasTools ? 'debate' : 'mixed',
      events: this.events,
      edges,
      rewards: rewardsByChannel(rewards),
      costs: {
        tokens: nonNeg(r.tokens || promptTokens),
        wall_clock_s: nonNeg(Math.round(r.wallMs || lastEnd - this.t0) / 1000),
        tool_calls: nonNeg(r.toolCalls || this.sorted.filter((s) => s.type === 'tool').length),
        messages: nonNeg(r.messages || this.events.filter((e) => e.type === 'message').length),
      },
      metrics,
    };
  }

  // ---------------------------------------------------------------- spans

  private span(s: Span): void {
    if (s.type === 'reward') return;
    const p = obj(s.payload);
    const depth = nestedDepth(p);
    const scope = depth ? this.scope(num(p.delegate_seq) ?? 0, depth) : this.root;
    const t = this.t(s.startedAt);
    const agent = scope.name(s.agent ?? ORCHESTRATOR);
    const orchestrator = scope.name(ORCHESTRATOR);
    const base = { t, agent, seq: s.seq, ...scope.tags };
    if (s.type === 'prompt') return this.prompt(scope, s, p);
    if (s.type === 'tool') return this.tool(scope, s, p);
    if (s.type === 'message') {
      this.spawn(scope, s);
      const id = this.add({
        id: `e${s.seq}`,
        ...base,
        type: 'message',
        role: str(p.kind) ?? s.name,
        from: orchestrator,
        to: agent,
        content_ref: contentRef(p.messages ?? p.content ?? p.detail ?? p),
      });
      this.outputOf.set(s.seq, id);
      if (s.agent) scope.latestInput.set(s.agent, id);
      return;
    }
    switch (s.name) {
      case 'round': {
        this.despawnAll(scope);
        const first = scope.roundEvent === null;
        scope.roundSeq = s.seq;
        scope.roundEvent = this.add({
          id: `e${s.seq}`,
          ...base,
          agent: orchestrator,
          type: 'orchestrator_decision',
          decision: 'round',
          round: num(p.round),
          trigger: str(p.trigger),
          answer_labels: Array.isArray(p.answer_labels) ? p.answer_labels : [],
        });
        if (first) for (const spawn of scope.spawnedBy) this.edge(spawn, scope.roundEvent, 'spawn');
        return;
      }
      case 'new_answer': {
        this.spawn(scope, s);
        const id = this.add({
          id: `e${s.seq}`,
          ...base,
          type: 'return',
          role: 'answer',
          to: orchestrator,
          label: str(p.label),
          round: num(p.round),
          content_ref: contentRef(p.content ?? ''),
        });
        this.causalFrom(p.prompt_seq, id);
        if (s.agent) scope.latestAnswer.set(s.agent, id);
        scope.supersededVotes = scope.standingVotes;
        scope.standingVotes = [];
        return;
      }
      case 'vote': {
        this.spawn(scope, s);
        const target = str(p.target_agent);
        const id = this.add({
          id: `e${s.seq}`,
          ...base,
          type: 'aggregate',
          role: 'vote',
          from: agent,
          to: target && scope.name(target),
          label: str(p.target_label),
          round: num(p.round),
          content_ref: contentRef(p.reason ?? ''),
        });
        this.causalFrom(p.prompt_seq, id);
        scope.standingVotes.push(id);
        return;
      }
      case 'policy_decision': {
        const id = this.add({
          id: `e${s.seq}`,
          ...base,
          agent: orchestrator,
          type: 'orchestrator_decision',
          decision: `policy:${str(p.policy) ?? 'unknown'}`,
          chosen: str(p.chosen),
          propensity: num(p.propensity),
          policy_id: str(p.policy_id),
          round: num(p.round),
        });
        if (scope.roundEvent) this.edge(scope.roundEvent, id, 'causal');
        if (p.policy === 'stop' && p.chosen === 'stop') scope.standingVotes = scope.supersededVotes;
        return;
      }
      case 'invalid_action': {
        this.spawn(scope, s);
        const id = this.add({
          id: `e${s.seq}`,
          ...base,
          type: 'safety_event',
          role: 'invalid_action',
          kind: str(p.kind),
          content_ref: contentRef(p.detail ?? ''),
        });
        const src = (s.agent && scope.latestInput.get(s.agent)) ?? this.parentOutput(s);
        if (src) this.edge(src, id, 'safety_flow');
        return;
      }
      case 'cancel':
      case 'drop': {
        this.add({
          id: `e${s.seq}`,
          ...base,
          agent: orchestrator,
          type: 'orchestrator_decision',
          decision: s.name,
          to: s.agent ? agent : undefined,
          reason: str(p.reason),
          kind: str(p.kind),
          content_ref: contentRef(p.reason ?? p.detail ?? ''),
        });
        if (s.agent) this.despawn(scope, s.agent, s.seq);
        return;
      }
      case 'final_selection': {
        this.despawnAll(scope);
        const tally = this.add({
          id: `e${s.seq}.tally`,
          ...base,
          agent: orchestrator,
          type: 'aggregate',
          role: 'vote_tally',
          votes: obj(p.votes),
          consensus: p.consensus === true,
        });
        for (const v of scope.standingVotes) this.edge(v, tally, 'aggregate');
        const winner = str(p.winner_agent);
        const id = this.add({
          id: `e${s.seq}`,
          ...base,
          agent: orchestrator,
          type: 'orchestrator_decision',
          decision: 'final_selection',
          to: winner && scope.name(winner),
          label: str(p.winner_label),
          reason: str(p.reason),
          rounds: num(p.rounds),
        });
        this.edge(tally, id, 'causal');
        for (const a of scope.latestAnswer.values()) this.edge(a, id, 'return');
        scope.selectionEvent = id;
        return;
      }
      case 'presentation': {
        this.spawn(scope, s);
        const id = this.add({
          id: `e${s.seq}`,
          ...base,
          type: 'message',
          role: 'presentation',
          from: agent,
          to: scope.depth ? orchestrator : 'user',
          content_ref: contentRef(p.content ?? ''),
        });
        if (scope.selectionEvent) this.edge(scope.selectionEvent, id, 'message');
        this.causalFrom(p.prompt_seq, id);
        scope.presentationEvent = id;
        return;
      }
      case 'delegate':
        return this.delegate(scope, s, p);
      case 'delegate_return':
        return this.delegateReturn(scope, s, p);
      case 'delegate_aggregate':
        return this.delegateAggregate(scope, s, p);
      default: {
        if (s.agent && s.name !== 'restart') this.spawn(scope, s);
        this.add({
          id: `e${s.seq}`,
          ...base,
          agent: orchestrator,
          type: 'orchestrator_decision',
          decision: s.name,
          to: s.agent ? agent : undefined,
          ...(p.feedback !== undefined ? { content_ref: contentRef(p.feedback) } : {}),
        });
      }
    }
  }

  private prompt(scope: TraceScope, s: Span, p: P): void {
    this.spawn(scope, s);
    const agent = scope.name(s.agent ?? ORCHESTRATOR);
    const request = obj(p.request);
    const model = str(request.model) ?? 'model';
    const req = this.add({
      id: `e${s.seq}.req`,
      t: this.t(s.startedAt),
      agent,
      seq: s.seq,
      ...scope.tags,
      type: 'message',
      role: 'request',
      from: agent,
      to: model,
      content_ref: contentRef(request.messages ?? []),
    });
    this.outputOf.set(s.seq, req);
    if (p.response && typeof p.response === 'object') {
      const response = obj(p.response);
      const latency = num(p.latency_ms) ?? s.durationMs;
      const ttft = num(p.ttft_ms);
      const res = this.add({
        id: `e${s.seq}.res`,
        t: this.t(s.startedAt + Math.max(0, latency)),
        agent,
        seq: s.seq,
        ...scope.tags,
        type: 'message',
        role: 'response',
        from: model,
        to: agent,
        content_ref: contentRef({ content: response.content ?? null, tool_calls: response.tool_calls ?? [] }),
        finish_reason: str(response.finish_reason),
        tokens: num(obj(p.usage).total_tokens),
        ...(ttft === undefined ? {} : { ttft_s: Math.round(ttft * 1000) / 1e6 }),
      });
      this.edge(req, res, 'causal');
      this.outputOf.set(s.seq, res);
    }
    if (s.agent) scope.latestInput.set(s.agent, this.outputOf.get(s.seq)!);
  }

  private tool(scope: TraceScope, s: Span, p: P): void {
    this.spawn(scope, s);
    const agent = scope.name(s.agent ?? ORCHESTRATOR);
    const name = str(p.name) ?? s.name;
    const call = this.add({
      id: `e${s.seq}.call`,
      t: this.t(s.startedAt),
      agent,
      seq: s.seq,
      ...scope.tags,
      type: 'tool_call',
      tool: name,
      content_ref: contentRef(p.args ?? null),
    });
    const result = this.add({
      id: `e${s.seq}.result`,
      t: this.t(s.startedAt + Math.max(0, s.durationMs)),
      agent,
      seq: s.seq,
      ...scope.tags,
      type: 'tool_result',
      tool: name,
      success: p.success !== false,
      content_ref: contentRef(p.result ?? p.error ?? null),
    });
    this.edge(call, result, 'tool_dependency');
    const parent = this.parentOutput(s);
    if (parent) this.edge(parent, call, 'causal');
    this.outputOf.set(s.seq, result);
    // A delegate call's result is what its child orchestration returned.
    const returned = s.agent ? scope.pendingReturns.get(s.agent) : undefined;
    if (returned && name === 'delegate') {
      this.edge(returned, result, 'return');
      scope.pendingReturns.delete(s.agent!);
    }
  }

  // ---------------------------------------------------------------- delegation

  /** delegate: a spawn event per child agent (role delegation), from the reply that called the tool. */
  private delegate(scope: TraceScope, s: Span, p: P): void {
    this.spawn(scope, s);
    const child = this.scope(s.seq, num(p.child_depth) ?? scope.depth + 1);
    const from = scope.name(s.agent ?? ORCHESTRATOR);
    const src = this.outputOf.get(num(p.prompt_seq) ?? -1) ?? (s.agent ? scope.latestInput.get(s.agent) : undefined);
    const agents = Array.isArray(p.child_agents)
      ? p.child_agents.filter((a): a is string => typeof a === 'string' && a.length > 0)
      : [];
    for (const a of agents.length ? agents : [ORCHESTRATOR]) {
      const to = child.name(a);
      const id = this.add({
        id: `e${s.seq}.${to}`,
        t: this.t(s.startedAt),
        agent: to,
        seq: s.seq,
        ...child.tags,
        type: 'spawn',
        role: 'delegation',
        from,
        to,
        shape: str(p.shape),
        content_ref: contentRef(p.task ?? ''),
      });
      if (src) this.edge(src, id, 'spawn');
      child.spawnedBy.push(id);
    }
  }

  /** delegate_return: a return event from the child's winner to the delegating agent. */
  private delegateReturn(scope: TraceScope, s: Span, p: P): void {
    const child = this.scope(num(p.delegate_seq) ?? 0, num(p.child_depth) ?? scope.depth + 1);
    this.despawnAll(child);
    const from = child.name(str(p.winner_agent) ?? ORCHESTRATOR);
    const id = this.add({
      id: `e${s.seq}`,
      t: this.t(s.startedAt),
      agent: from,
      seq: s.seq,
      ...child.tags,
      type: 'return',
      role: 'delegate_return',
      from,
      to: scope.name(s.agent ?? ORCHESTRATOR),
      status: str(p.status),
      stopped: str(p.stopped),
      rounds: num(p.rounds),
      tokens: num(p.tokens),
      content_ref: contentRef(p.final_answer ?? ''),
    });
    const last = child.presentationEvent ?? child.selectionEvent;
    if (last) this.edge(last, id, 'return');
    if (s.agent) scope.pendingReturns.set(s.agent, id);
  }

  /** delegate_aggregate: an aggregate event with an edge from each returned answer the final answer used. */
  private delegateAggregate(scope: TraceScope, s: Span, p: P): void {
    const uses: Record<string, number> = {};
    for (const r of Array.isArray(p.returns) ? p.returns.map(obj) : []) {
      const rid = `e${num(r.return_seq) ?? -1}`;
      if (this.ids.has(rid)) uses[rid] = num(r.use) ?? 0;
    }
    const winner = str(p.winner_agent);
    const id = this.add({
      id: `e${s.seq}`,
      t: this.t(s.startedAt),
      agent: scope.name(ORCHESTRATOR),
      seq: s.seq,
      ...scope.tags,
      type: 'aggregate',
      role: 'delegate_aggregate',
      to: winner && scope.name(winner),
      uses,
      used: Object.values(uses).filter((u) => u > 0).length,
    });
    for (const [rid, use] of Object.entries(uses)) if (use > 0) this.edge(rid, id, 'aggregate');
    if (scope.presentationEvent) this.edge(scope.presentationEvent, id, 'causal');
  }

  private scope(key: number, depth: number): TraceScope {
    if (!depth) return this.root;
    let scope = this.scopes.get(key);
    if (!scope) this.scopes.set(key, (scope = new TraceScope(key, depth)));
    return scope;
  }

  // ---------------------------------------------------------------- agent lifetimes

  private spawn(scope: TraceScope, s: Span): void {
    const agent = s.agent;
    if (!agent) return;
    const end = s.startedAt + Math.max(0, s.durationMs);
    if (!scope.active.has(agent)) {
      const id = this.add({
        id: `s${s.seq}.${scope.name(agent)}`,
        t: this.t(s.startedAt),
        agent: scope.name(agent),
        seq: s.seq,
        ...scope.tags,
        type: 'spawn',
        round_seq: scope.roundSeq || undefined,
      });
      if (scope.roundEvent) this.edge(scope.roundEvent, id, 'spawn');
    }
    scope.active.set(agent, Math.max(end, scope.active.get(agent) ?? end));
  }

  private despawn(scope: TraceScope, agent: string, seq: number): void {
    const end = scope.active.get(agent);
    if (end === undefined) return;
    scope.active.delete(agent);
    this.add({
      id: scope.despawnId(seq, agent),
      t: this.t(end),
      agent: scope.name(agent),
      ...scope.tags,
      type: 'despawn',
      round_seq: scope.roundSeq || undefined,
    });
  }

  private despawnAll(scope: TraceScope): void {
    const last = this.sorted[this.sorted.length - 1]?.seq ?? 0;
    for (const agent of [...scope.active.keys()])
      this.despawn(scope, agent, this.events.length ? this.currentSeq() : last);
  }

  private currentSeq(): number {
    for (let i = this.events.length - 1; i >= 0; i--) {
      const seq = this.events[i]!.seq;
      if (seq !== undefined) return seq;
    }
    return 0;
  }

  // ---------------------------------------------------------------- helpers

  private add(e: OrchestrationEvent): string {
    const clean = Object.fromEntries(Object.entries(e).filter(([, v]) => v !== undefined)) as OrchestrationEvent;
    this.events.push(clean);
    this.ids.add(clean.id);
    return clean.id;
  }

  private edge(src: string, dst: string, type: OrchestrationEdgeType): void {
    this.edges.push({ src, dst, type });
  }

  private causalFrom(promptSeq: unknown, dst: string): void {
    const seq = num(promptSeq);
    const src = seq === undefined ? undefined : this.outputOf.get(seq);
    if (src) this.edge(src, dst, 'causal');
  }

  private parentOutput(s: Span): string | undefined {
    return s.parentSeq !== null && this.spanTypes.get(s.parentSeq) === 'prompt'
      ? this.outputOf.get(s.parentSeq)
      : undefined;
  }

  private t(ms: number): number {
    return Math.max(0, Math.round((ms - this.t0) * 1000) / 1e6);
  }
}

function nonNeg(n: number): number {
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/** Reward values summed per channel (rollout, agent, turn, ...); non-finite values are left out. */
export function rewardsByChannel(rewards: readonly Reward[]): Record<string, number> {
  const out = dict<number>();
  for (const r of rewards) if (Number.isFinite(r.value)) out[r.channel] = (out[r.channel] ?? 0) + r.value;
  return out;
}
