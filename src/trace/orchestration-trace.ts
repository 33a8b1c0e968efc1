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
 * Text never leaves: content_ref is "sha256:<hex>" of the text (objects: of their canonical JSON).
 * t is seconds since the rollout started (clamped at 0). Topology: debate when two or more agents
 * answer or vote and no tool was called; mixed otherwise.
 */
import type { Reward, Rollout, Span } from './records.js';
import { canonicalJson, sha256 } from '../util/hash.js';
import { dict } from '../util/dict.js';

export type OrchestrationEventType =
  | 'orchestrator_decision' | 'spawn' | 'despawn' | 'message' | 'tool_call' | 'tool_result' | 'return' | 'aggregate'
  | 'human_intervention' | 'safety_event';
export type OrchestrationEdgeType = 'temporal' | 'causal' | 'spawn' | 'message' | 'tool_dependency' | 'return' | 'aggregate' | 'safety_flow';

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
  topology: 'debate' | 'mixed';
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

export function toOrchestrationTrace(rollout: Rollout, spans: readonly Span[], rewards: readonly Reward[]): OrchestrationTrace {
  return new Builder(rollout, spans).build(rewards);
}

class Builder {
  private readonly events: OrchestrationEvent[] = [];
  private readonly edges: OrchestrationEdge[] = [];
  private readonly sorted: Span[];
  private readonly t0: number;
  /** span seq → the event that stands for its output (a prompt's response, a message). */
  private readonly outputOf = new Map<number, string>();
  private readonly spanTypes = new Map<number, string>();
  /** Agents active in the current round → the end time (ms) of their latest span. */
  private readonly active = new Map<string, number>();
  private roundEvent: string | null = null;
  private roundSeq = 0;
  private readonly latestAnswer = new Map<string, string>();
  private standingVotes: string[] = [];
  /** The votes a new answer superseded: standing again when a stop policy ends the round there. */
  private supersededVotes: string[] = [];
  private readonly latestInput = new Map<string, string>();
  private selectionEvent: string | null = null;

  constructor(private readonly rollout: Rollout, spans: readonly Span[]) {
    this.sorted = [...spans].sort((a, b) => a.seq - b.seq);
    this.t0 = this.sorted.reduce((min, s) => (Number.isFinite(s.startedAt) ? Math.min(min, s.startedAt) : min), rollout.startedAt);
    for (const s of this.sorted) this.spanTypes.set(s.seq, s.type);
  }

  build(rewards: readonly Reward[]): OrchestrationTrace {
    for (const s of this.sorted) this.span(s);
    this.despawnAll();
    if (!this.events.length) {
      this.add({ id: 'start', t: 0, type: 'orchestrator_decision', agent: ORCHESTRATOR, decision: 'start', status: this.rollout.status });
    }
    // Temporal edges first (in event order), then the structural ones in the order they were found.
    const temporal = this.events.slice(1).map((e, i): OrchestrationEdge => ({ src: this.events[i]!.id, dst: e.id, type: 'temporal' }));
    const edges = [...temporal, ...this.edges];

    const r = this.rollout;
    const promptTokens = this.sorted.filter((s) => s.type === 'prompt').reduce((n, s) => n + (num(obj(obj(s.payload).usage).total_tokens) ?? 0), 0);
    const lastEnd = this.sorted.reduce((max, s) => Math.max(max, s.startedAt + Math.max(0, s.durationMs)), this.t0);
    const agents = new Set(this.sorted.filter((s) => s.agent).map((s) => s.agent!));
    const debaters = new Set(this.sorted.filter((s) => s.name === 'new_answer' || s.name === 'vote').map((s) => s.agent ?? ''));
    const hasTools = this.sorted.some((s) => s.type === 'tool');
    const selection = this.sorted.find((s) => s.name === 'final_selection');

    const metrics: Record<string, number> = {
      agents: agents.size,
      rounds: this.sorted.filter((s) => s.name === 'round').length,
      answers: this.sorted.filter((s) => s.name === 'new_answer').length,
      votes: this.sorted.filter((s) => s.name === 'vote').length,
      completed: r.status === 'completed' && r.finalAnswer !== null ? 1 : 0,
    };
    if (selection) metrics.consensus = obj(selection.payload).consensus === true ? 1 : 0;
    if (r.totalReward !== null && Number.isFinite(r.totalReward)) metrics.total_reward = r.totalReward;

    return {
      trace_id: r.id,
      task_id: r.taskId ?? (str(r.metadata.original_task) ? `task:${contentRef(r.metadata.original_task).slice(7, 23)}` : `rollout:${r.id}`),
      system: r.source === 'massgen-import' ? 'massgen' : 'massgen-rl',
      topology: debaters.size >= 2 && !hasTools ? 'debate' : 'mixed',
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
    const p = obj(s.payload);
    const t = this.t(s.startedAt);
    const agent = s.agent ?? ORCHESTRATOR;
    const base = { t, agent, seq: s.seq };
    if (s.type === 'reward') return;
    if (s.type === 'prompt') return this.prompt(s, p);
    if (s.type === 'tool') return this.tool(s, p);
    if (s.type === 'message') {
      this.spawn(s);
      const id = this.add({
        id: `e${s.seq}`, ...base, type: 'message', role: str(p.kind) ?? s.name, from: ORCHESTRATOR, to: agent,
        content_ref: contentRef(p.messages ?? p.content ?? p.detail ?? p),
      });
      this.outputOf.set(s.seq, id);
      if (s.agent) this.latestInput.set(s.agent, id);
      return;
    }
    switch (s.name) {
      case 'round': {
        this.despawnAll();
        this.roundSeq = s.seq;
        this.roundEvent = this.add({
          id: `e${s.seq}`, ...base, agent: ORCHESTRATOR, type: 'orchestrator_decision', decision: 'round',
          round: num(p.round), trigger: str(p.trigger), answer_labels: Array.isArray(p.answer_labels) ? p.answer_labels : [],
        });
        return;
      }
      case 'new_answer': {
        this.spawn(s);
        const id = this.add({ id: `e${s.seq}`, ...base, type: 'return', role: 'answer', to: ORCHESTRATOR, label: str(p.label), round: num(p.round), content_ref: contentRef(p.content ?? '') });
        this.causalFrom(p.prompt_seq, id);
        if (s.agent) this.latestAnswer.set(s.agent, id);
        this.supersededVotes = this.standingVotes;
        this.standingVotes = [];
        return;
      }
      case 'vote': {
        this.spawn(s);
        const id = this.add({
          id: `e${s.seq}`, ...base, type: 'aggregate', role: 'vote', from: agent, to: str(p.target_agent), label: str(p.target_label),
          round: num(p.round), content_ref: contentRef(p.reason ?? ''),
        });
        this.causalFrom(p.prompt_seq, id);
        this.standingVotes.push(id);
        return;
      }
      case 'policy_decision': {
        const id = this.add({
          id: `e${s.seq}`, ...base, agent: ORCHESTRATOR, type: 'orchestrator_decision', decision: `policy:${str(p.policy) ?? 'unknown'}`,
          chosen: str(p.chosen), propensity: num(p.propensity), policy_id: str(p.policy_id), round: num(p.round),
        });
        if (this.roundEvent) this.edge(this.roundEvent, id, 'causal');
        if (p.policy === 'stop' && p.chosen === 'stop') this.standingVotes = this.supersededVotes;
        return;
      }
      case 'invalid_action': {
        this.spawn(s);
        const id = this.add({ id: `e${s.seq}`, ...base, type: 'safety_event', role: 'invalid_action', kind: str(p.kind), content_ref: contentRef(p.detail ?? '') });
        const src = (s.agent && this.latestInput.get(s.agent)) ?? this.parentOutput(s);
        if (src) this.edge(src, id, 'safety_flow');
        return;
      }
      case 'cancel':
      case 'drop': {
        this.add({
          id: `e${s.seq}`, ...base, agent: ORCHESTRATOR, type: 'orchestrator_decision', decision: s.name, to: s.agent ?? undefined,
          reason: str(p.reason), kind: str(p.kind), content_ref: contentRef(p.reason ?? p.detail ?? ''),
        });
        if (s.agent) this.despawn(s.agent, s.seq);
        return;
      }
      case 'final_selection': {
        this.despawnAll();
        const tally = this.add({
          id: `e${s.seq}.tally`, ...base, agent: ORCHESTRATOR, type: 'aggregate', role: 'vote_tally', votes: obj(p.votes), consensus: p.consensus === true,
        });
        for (const v of this.standingVotes) this.edge(v, tally, 'aggregate');
        const id = this.add({
          id: `e${s.seq}`, ...base, agent: ORCHESTRATOR, type: 'orchestrator_decision', decision: 'final_selection',
          to: str(p.winner_agent), label: str(p.winner_label), reason: str(p.reason), rounds: num(p.rounds),
        });
        this.edge(tally, id, 'causal');
        for (const a of this.latestAnswer.values()) this.edge(a, id, 'return');
        this.selectionEvent = id;
        return;
      }
      case 'presentation': {
        this.spawn(s);
        const id = this.add({ id: `e${s.seq}`, ...base, type: 'message', role: 'presentation', from: agent, to: 'user', content_ref: contentRef(p.content ?? '') });
        if (this.selectionEvent) this.edge(this.selectionEvent, id, 'message');
        this.causalFrom(p.prompt_seq, id);
        return;
      }
      default: {
        if (s.agent && s.name !== 'restart') this.spawn(s);
        this.add({
          id: `e${s.seq}`, ...base, agent: ORCHESTRATOR, type: 'orchestrator_decision', decision: s.name, to: s.agent ?? undefined,
          ...(p.feedback !== undefined ? { content_ref: contentRef(p.feedback) } : {}),
        });
      }
    }
  }

  private prompt(s: Span, p: P): void {
    this.spawn(s);
    const agent = s.agent ?? ORCHESTRATOR;
    const request = obj(p.request);
    const model = str(request.model) ?? 'model';
    const req = this.add({
      id: `e${s.seq}.req`, t: this.t(s.startedAt), agent, seq: s.seq, type: 'message', role: 'request', from: agent, to: model,
      content_ref: contentRef(request.messages ?? []),
    });
    this.outputOf.set(s.seq, req);
    if (p.response && typeof p.response === 'object') {
      const response = obj(p.response);
      const latency = num(p.latency_ms) ?? s.durationMs;
      const res = this.add({
        id: `e${s.seq}.res`, t: this.t(s.startedAt + Math.max(0, latency)), agent, seq: s.seq, type: 'message', role: 'response', from: model, to: agent,
        content_ref: contentRef({ content: response.content ?? null, tool_calls: response.tool_calls ?? [] }),
        finish_reason: str(response.finish_reason), tokens: num(obj(p.usage).total_tokens),
      });
      this.edge(req, res, 'causal');
      this.outputOf.set(s.seq, res);
    }
    if (s.agent) this.latestInput.set(s.agent, this.outputOf.get(s.seq)!);
  }

  private tool(s: Span, p: P): void {
    this.spawn(s);
    const agent = s.agent ?? ORCHESTRATOR;
    const name = str(p.name) ?? s.name;
    const call = this.add({ id: `e${s.seq}.call`, t: this.t(s.startedAt), agent, seq: s.seq, type: 'tool_call', tool: name, content_ref: contentRef(p.args ?? null) });
    const result = this.add({
      id: `e${s.seq}.result`, t: this.t(s.startedAt + Math.max(0, s.durationMs)), agent, seq: s.seq, type: 'tool_result', tool: name,
      success: p.success !== false, content_ref: contentRef(p.result ?? p.error ?? null),
    });
    this.edge(call, result, 'tool_dependency');
    const parent = this.parentOutput(s);
    if (parent) this.edge(parent, call, 'causal');
    this.outputOf.set(s.seq, result);
  }

  // ---------------------------------------------------------------- agent lifetimes

  private spawn(s: Span): void {
    const agent = s.agent;
    if (!agent) return;
    const end = s.startedAt + Math.max(0, s.durationMs);
    if (!this.active.has(agent)) {
      const id = this.add({ id: `s${s.seq}.${agent}`, t: this.t(s.startedAt), agent, seq: s.seq, type: 'spawn', round_seq: this.roundSeq || undefined });
      if (this.roundEvent) this.edge(this.roundEvent, id, 'spawn');
    }
    this.active.set(agent, Math.max(end, this.active.get(agent) ?? end));
  }

  private despawn(agent: string, seq: number): void {
    const end = this.active.get(agent);
    if (end === undefined) return;
    this.active.delete(agent);
    this.add({ id: `d${seq}.${agent}`, t: this.t(end), agent, type: 'despawn', round_seq: this.roundSeq || undefined });
  }

  private despawnAll(): void {
    const last = this.sorted[this.sorted.length - 1]?.seq ?? 0;
    for (const agent of [...this.active.keys()]) this.despawn(agent, this.events.length ? this.currentSeq() : last);
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
    return s.parentSeq !== null && this.spanTypes.get(s.parentSeq) === 'prompt' ? this.outputOf.get(s.parentSeq) : undefined;
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
