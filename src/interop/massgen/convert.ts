import fs from 'node:fs';
import path from 'node:path';
import type { RolloutFinish, SpanInput } from '../../store/types.js';
import type {
  CancelPayload,
  DropPayload,
  InvalidActionPayload,
  Label,
  NewAnswerPayload,
  PresentationPayload,
  RestartPayload,
  RoundPayload,
  SelectionPayload,
  VotePayload,
} from '../../trace/payloads.js';
import { sha256 } from '../../util/hash.js';
import { sessionOfUrl } from '../../util/session-url.js';
import type { MassgenUnit } from './discover.js';
import { FileReader, MassgenInputError } from './files.js';
import {
  contextFile,
  coordinationEvents,
  metricsSummary,
  snapshotMappings,
  voteFile,
  type ContextFile,
  type CoordinationEvents,
  type MassgenEvent,
  type MetricsSummary,
  type SnapshotMappings,
} from './format.js';

export { MASSGEN_IMPORT_SOURCE } from '../../store/rollouts.js';

/** Payload of the `message` spans an import writes: what an agent was given (MassGen's context.txt). */
export interface ContextMessagePayload {
  turn_id: string;
  /** context: the prompt an agent (re)started with; update: answers injected mid-stream; presentation: the final presenter's prompt. */
  kind: 'context' | 'update' | 'presentation';
  round: number;
  answer_labels_seen: Label[];
  /** MassGen's versioned answer labels (agent1.2 = agent1's second answer). */
  massgen_labels_seen: string[];
  /** The agentN ids as shown inside this prompt (MassGen numbers the answering agents by sorted id there) → our labels. */
  prompt_labels?: Record<string, Label>;
  /** system and user messages from context.txt; null when MassGen saved no context for this start (the agent never acted on it). */
  messages: { role: string; content: string }[] | null;
  tools?: string[];
  detail?: string;
  /** context.txt relative to the imported directory. */
  source: string | null;
}

export interface ConvertedRollout {
  id: string;
  unit: MassgenUnit;
  metadata: Record<string, unknown>;
  spans: SpanInput[];
  finish: RolloutFinish;
  /** Epoch ms, from MassGen's session start and end. */
  startedAt: number;
  finishedAt: number;
  stats: { answers: number; votes: number; rounds: number };
}

export type ConvertResult = { kind: 'ok'; rollout: ConvertedRollout } | { kind: 'incomplete'; reason: string };

/** Deterministic: the same log directory, turn and attempt always map to the same rollout (re-imports are skipped). */
export function massgenRolloutId(log: string, turn: number, attempt: number | null): string {
  return `mg_${sha256(`${log}/turn_${turn}${attempt === null ? '' : `/attempt_${attempt}`}`).slice(0, 24)}`;
}

export function unitName(u: Pick<MassgenUnit, 'log' | 'turn' | 'attempt'>): string {
  return `${u.log}/turn_${u.turn}${u.attempt === null ? '' : `/attempt_${u.attempt}`}`;
}

const FEEDBACK = /<PREVIOUS ATTEMPT FEEDBACK>\n?([\s\S]*?)\n?<END OF PREVIOUS ATTEMPT FEEDBACK>/;
const SNAPSHOT_DIR = /^\d{8}_\d{6}_\d{6}$/;

/** Reads one turn (or attempt) directory and maps it onto our trace vocabulary. Reads only; never writes. */
export function convertUnit(unit: MassgenUnit, reader: FileReader): ConvertResult {
  const eventsFile = path.join(unit.dir, 'coordination_events.json');
  if (!reader.exists(eventsFile)) {
    return {
      kind: 'incomplete',
      reason:
        'no coordination_events.json (MassGen writes it when the final presentation ends; the run was interrupted or is still going)',
    };
  }
  const log = reader.json(eventsFile, coordinationEvents, 'coordination_events.json');
  const mappingsFile = path.join(unit.dir, 'snapshot_mappings.json');
  const mappings = reader.exists(mappingsFile)
    ? reader.json(mappingsFile, snapshotMappings, 'snapshot_mappings.json')
    : null;
  const execution = readExecutionMetadata(unit, reader);
  const metricsFile = path.join(unit.dir, 'metrics_summary.json');
  const metrics = reader.exists(metricsFile) ? reader.json(metricsFile, metricsSummary, 'metrics_summary.json') : null;
  return { kind: 'ok', rollout: new Converter(unit, reader, log, mappings, execution, metrics).run() };
}

/** Token counts as MassGen summed them from the API's usage (its totals are the sums over agents). */
function usageOf(m: MetricsSummary) {
  const t = m.totals;
  const byAgent = Object.fromEntries(
    Object.entries(m.agents ?? {}).flatMap(([id, a]) =>
      a.token_usage
        ? [[id, { input_tokens: a.token_usage.input_tokens ?? 0, output_tokens: a.token_usage.output_tokens ?? 0 }]]
        : [],
    ),
  );
  return {
    input_tokens: t.input_tokens ?? 0,
    output_tokens: t.output_tokens ?? 0,
    reasoning_tokens: t.reasoning_tokens ?? 0,
    estimated_cost: t.estimated_cost ?? 0,
    llm_calls: m.api_timing?.total_calls ?? null,
    by_agent: byAgent,
  };
}

interface ExecutionInfo {
  query: string | null;
  models: Record<string, string>;
  massgenVersion: string | null;
  /** Agents whose base URL is a massgen-rl gateway session's (`.../session/<id>/agent/<id>/v1`): the session. */
  gatewaySession: string | null;
}

function readExecutionMetadata(unit: MassgenUnit, reader: FileReader): ExecutionInfo {
  const file = [
    path.join(unit.dir, 'execution_metadata.yaml'),
    path.join(unit.turnDir, 'execution_metadata.yaml'),
  ].find((f) => reader.exists(f));
  const info: ExecutionInfo = { query: null, models: {}, massgenVersion: null, gatewaySession: null };
  if (!file) return info;
  const doc = reader.yaml(file);
  if (!isRecord(doc))
    throw new MassgenInputError(
      reader.display(file),
      'not a MassGen execution_metadata.yaml: expected a mapping at the top level',
      { line: 1, column: 1 },
    );
  if (typeof doc.query === 'string') info.query = doc.query;
  if (typeof doc.massgen_version === 'string') info.massgenVersion = doc.massgen_version;
  const config = isRecord(doc.config) ? doc.config : {};
  const agents = Array.isArray(config.agents) ? config.agents : isRecord(config.agent) ? [config.agent] : [];
  for (const a of agents) {
    if (isRecord(a) && typeof a.id === 'string' && isRecord(a.backend) && typeof a.backend.model === 'string')
      info.models[a.id] = a.backend.model;
    const tagged =
      isRecord(a) && isRecord(a.backend) && typeof a.backend.base_url === 'string'
        ? sessionOfUrl(a.backend.base_url)
        : null;
    if (tagged?.agent !== undefined && /^\/v1\/?$/.test(tagged.rest)) info.gatewaySession = safeDecode(tagged.session);
  }
  return info;
}

function safeDecode(v: string): string {
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

interface AnswerRecord {
  agent: string;
  massgenLabel: string;
  content: string;
  seq: number;
}

class Converter {
  private readonly spans: SpanInput[] = [];
  private readonly agents: string[];
  private readonly labels = new Map<string, Label>();
  private readonly latest = new Map<string, AnswerRecord>();
  private readonly answers: AnswerRecord[] = [];
  /** voter → voted-for agent: the votes standing now (a new answer invalidates them, as in MassGen). */
  private readonly standingVotes = new Map<string, { target: string; reason: string }>();
  private readonly seen = new Map<string, Map<string, string>>(); // agent → (answering agent → massgen label)
  private readonly contextSpan = new Map<string, number>(); // agent → index of its current context span
  private readonly turns = new Map<string, number>();
  private readonly voteCount = new Map<string, number>();
  /** Our round number: 1 for the first, +1 at every new answer set (as the orchestrator numbers them). */
  private round = 1;
  private roundIndex = -1;
  private votes = 0;
  private selectionDone = false;
  private selectionTs: number | null = null;
  private presentationContext: number | null = null;
  private finalRoundStart: number | null = null;
  private finalAnswer: string | null = null;
  private winner: string | null = null;
  private readonly roundsOnRestartSignal: boolean;
  private readonly text: (file: string) => string;

  constructor(
    private readonly unit: MassgenUnit,
    private readonly reader: FileReader,
    private readonly log: CoordinationEvents,
    private readonly mappings: SnapshotMappings | null,
    private readonly execution: ExecutionInfo,
    private readonly metrics: MetricsSummary | null,
  ) {
    this.agents = log.session_metadata.agent_ids;
    this.agents.forEach((a, i) => this.labels.set(a, `agent${i + 1}`));
    this.roundsOnRestartSignal = log.events.some((e) => e.event_type === 'restart_triggered');
    this.text = (file) => reader.text(file);
  }

  run(): ConvertedRollout {
    const meta = this.log.session_metadata;
    const events = this.log.events;
    const startS = meta.start_time ?? events[0]?.timestamp ?? 0;
    const endS = meta.end_time ?? events[events.length - 1]?.timestamp ?? startS;
    this.openRound(startS, this.unit.attempt !== null && this.unit.attempt > 1 ? 'restart' : 'start');

    for (const e of events) this.event(e);

    const endMs = endS * 1000;
    this.closeRound(this.finalRoundStart ?? endS);
    if (this.unit.nextAttemptDir) {
      const restart: RestartPayload = {
        restart: this.unit.attempt ?? 1,
        feedback: this.feedbackOf(this.unit.nextAttemptDir) ?? '',
      };
      this.push({
        type: 'coordination',
        name: 'restart',
        agent: this.winner,
        parentSeq: this.roundSeq(),
        startedAt: endMs,
        payload: restart,
      });
    }

    const original = meta.user_prompt ?? this.execution.query ?? null;
    const ownFeedback = this.unit.attempt !== null && this.unit.attempt > 1 ? this.feedbackInSpans() : null;
    const usage = this.metrics ? usageOf(this.metrics) : null;
    const metadata: Record<string, unknown> = {
      massgen_log: this.unit.log,
      turn: this.unit.turn,
      attempt: this.unit.attempt,
      original_task: original,
      massgen_dir: this.reader.display(this.unit.dir),
      agents: this.agents,
      labels: Object.fromEntries(this.labels),
      ...(Object.keys(this.execution.models).length ? { models: this.execution.models } : {}),
      ...(this.execution.massgenVersion ? { massgen_version: this.execution.massgenVersion } : {}),
      ...(this.execution.gatewaySession !== null ? { gateway_session: this.execution.gatewaySession } : {}),
      ...(ownFeedback !== null ? { restart_feedback: ownFeedback } : {}),
      ...(usage ? { massgen_usage: usage } : {}),
      restarted: this.unit.nextAttemptDir !== null,
    };
    const completed = this.finalAnswer !== null;
    const finish: RolloutFinish = {
      status: completed ? 'completed' : 'failed',
      error: completed ? null : 'the MassGen log has no final answer',
      finalAnswer: this.finalAnswer,
      winner: this.winner,
      tokens: usage ? usage.input_tokens + usage.output_tokens : 0,
      toolCalls: this.metrics?.tools?.total_calls ?? 0,
      messages: this.spans.filter((s) => s.type === 'message').length,
      wallMs: Math.max(0, (endS - startS) * 1000),
    };
    return {
      id: massgenRolloutId(this.unit.log, this.unit.turn, this.unit.attempt),
      unit: this.unit,
      metadata,
      spans: this.spans,
      finish,
      startedAt: Math.round(startS * 1000),
      finishedAt: Math.round(endS * 1000),
      stats: { answers: this.answers.length, votes: this.votes, rounds: this.round },
    };
  }

  // ---------------------------------------------------------------- events

  private event(e: MassgenEvent): void {
    const agent = e.agent_id ?? null;
    const ctx = e.context ?? {};
    switch (e.event_type) {
      case 'context_received':
        return this.context(e, agent!, ctx);
      case 'update_injected':
        return this.update(e, agent!);
      case 'new_answer':
        this.answer(e, agent!, String(ctx.label));
        if (!this.roundsOnRestartSignal) this.nextRound(e.timestamp);
        return;
      case 'restart_triggered':
        return this.nextRound(e.timestamp);
      case 'vote_cast':
        return this.vote(e, agent!, ctx);
      case 'agent_error':
      case 'agent_timeout':
        return this.drop(e, agent!);
      case 'agent_cancelled':
        return this.cancel(e, agent!);
      case 'final_round_start':
        this.finalRoundStart ??= e.timestamp;
        return;
      case 'final_agent_selected':
        return this.select(e.timestamp, agent!, ctx);
      case 'final_answer':
        return this.present(e, agent!);
      default:
        // session_start/end, iteration_start/end, status_change, restart_completed: bookkeeping without a span.
        return;
    }
  }

  private context(e: MassgenEvent, agent: string, ctx: Record<string, unknown>): void {
    const n = (this.turns.get(agent) ?? 0) + 1;
    this.turns.set(agent, n);
    const seen = new Map<string, string>();
    const massgenLabels = Array.isArray(ctx.available_answer_labels)
      ? ctx.available_answer_labels.filter((l): l is string => typeof l === 'string')
      : [];
    for (const l of massgenLabels) {
      const a = this.agentOfLabel(l);
      if (a) seen.set(a, l);
    }
    this.seen.set(agent, seen);
    const answering = [...seen.keys()].sort();
    const payload: ContextMessagePayload = {
      turn_id: this.turnId(agent),
      kind: 'context',
      round: this.round,
      answer_labels_seen: this.labelsOf(seen),
      massgen_labels_seen: massgenLabels,
      ...(answering.length
        ? { prompt_labels: Object.fromEntries(answering.map((a, i) => [`agent${i + 1}`, this.label(a)])) }
        : {}),
      messages: null,
      source: null,
    };
    this.contextSpan.set(
      agent,
      this.push({
        type: 'message',
        name: 'context',
        agent,
        parentSeq: this.roundSeq(),
        startedAt: e.timestamp * 1000,
        payload,
      }),
    );
  }

  private update(e: MassgenEvent, agent: string): void {
    const seen = this.seen.get(agent) ?? new Map<string, string>();
    const providers =
      /from: (.+)$/
        .exec(e.details ?? '')?.[1]
        ?.split(', ')
        .filter((a) => this.labels.has(a)) ?? [];
    for (const a of providers) {
      const l = this.latest.get(a)?.massgenLabel;
      if (l) seen.set(a, l);
    }
    this.seen.set(agent, seen);
    const payload: ContextMessagePayload = {
      turn_id: this.turnId(agent),
      kind: 'update',
      round: this.round,
      answer_labels_seen: this.labelsOf(seen),
      massgen_labels_seen: [...seen.values()],
      messages: null,
      detail: e.details ?? '',
      source: null,
    };
    this.push({
      type: 'message',
      name: 'update',
      agent,
      parentSeq: this.roundSeq(),
      startedAt: e.timestamp * 1000,
      payload,
    });
  }

  private answer(e: MassgenEvent, agent: string, massgenLabel: string): void {
    const k = Number(massgenLabel.split('.')[1]);
    const snap = this.snapshotDir(agent, massgenLabel, 'answer.txt', k);
    let content: string | null = null;
    if (snap && this.reader.exists(path.join(snap, 'answer.txt'))) content = this.text(path.join(snap, 'answer.txt'));
    content ??= this.answerFromSelection(massgenLabel);
    if (snap) this.attachContext(agent, snap);
    const seen = this.seen.get(agent) ?? new Map<string, string>();
    const payload: NewAnswerPayload & Record<string, unknown> = {
      turn_id: this.turnId(agent),
      label: this.label(agent),
      content: content ?? '',
      round: this.round,
      answer_labels_seen: this.labelsOf(seen),
      prompt_seq: this.contextSeq(agent),
      massgen_label: massgenLabel,
      snapshot: snap ? this.reader.display(path.join(snap, 'answer.txt')) : null,
      ...(content === null ? { content_missing: true } : {}),
    };
    const seq = this.push({
      type: 'coordination',
      name: 'new_answer',
      agent,
      parentSeq: this.roundSeq(),
      startedAt: e.timestamp * 1000,
      payload,
    });
    const record = { agent, massgenLabel, content: content ?? '', seq };
    this.answers.push(record);
    this.latest.set(agent, record);
    if (!this.roundsOnRestartSignal) this.standingVotes.clear();
  }

  private vote(e: MassgenEvent, voter: string, ctx: Record<string, unknown>): void {
    const target = String(ctx.voted_for);
    const reason = typeof ctx.reason === 'string' ? ctx.reason : '';
    const k = (this.voteCount.get(voter) ?? 0) + 1;
    this.voteCount.set(voter, k);
    const snap = this.snapshotDir(voter, `${this.label(voter)}.vote${k}`, 'vote.json', k);
    if (snap) {
      const file = path.join(snap, 'vote.json');
      if (this.reader.exists(file)) this.reader.json(file, voteFile, 'vote.json');
      this.attachContext(voter, snap);
    }
    const seen = this.seen.get(voter) ?? new Map<string, string>();
    const common = {
      turn_id: this.turnId(voter),
      round: this.round,
      parentSeq: this.roundSeq(),
      startedAt: e.timestamp * 1000,
    };
    if (!this.labels.has(target)) {
      const payload: InvalidActionPayload & Record<string, unknown> = {
        turn_id: common.turn_id,
        kind: 'unknown_target',
        detail: `vote for "${target}", which is not an agent of this coordination`,
        correction: '',
        attempt: 0,
        reason,
      };
      this.push({
        type: 'coordination',
        name: 'invalid_action',
        agent: voter,
        parentSeq: common.parentSeq,
        startedAt: common.startedAt,
        payload,
      });
      return;
    }
    const payload: VotePayload & Record<string, unknown> = {
      turn_id: common.turn_id,
      voter_label: this.label(voter),
      target_label: this.label(target),
      target_agent: target,
      reason,
      round: this.round,
      answer_labels_seen: this.labelsOf(seen),
      prompt_seq: this.contextSeq(voter),
      massgen_target_label: typeof ctx.voted_for_label === 'string' ? ctx.voted_for_label : null,
      snapshot: snap ? this.reader.display(path.join(snap, 'vote.json')) : null,
    };
    this.push({
      type: 'coordination',
      name: 'vote',
      agent: voter,
      parentSeq: common.parentSeq,
      startedAt: common.startedAt,
      payload,
    });
    this.votes++;
    this.standingVotes.set(voter, { target, reason });
  }

  private drop(e: MassgenEvent, agent: string): void {
    const payload: DropPayload & Record<string, unknown> = {
      kind: e.event_type === 'agent_timeout' ? 'timeout' : 'error',
      reason: (e.details ?? '').replace(/^(ERROR|TIMEOUT): /, ''),
      round: this.round,
      massgen_event: e.event_type,
    };
    this.push({
      type: 'coordination',
      name: 'drop',
      agent,
      parentSeq: this.roundSeq(),
      startedAt: e.timestamp * 1000,
      payload,
    });
  }

  private cancel(e: MassgenEvent, agent: string): void {
    const detail = (e.details ?? '').replace(/^CANCELLED: /, '');
    const reason: CancelPayload['reason'] = /timeout|time limit/i.test(detail)
      ? 'total_timeout'
      : /voted|complete/i.test(detail)
        ? 'superseded'
        : 'interrupted';
    const payload: CancelPayload & Record<string, unknown> = {
      turn_id: this.turnId(agent),
      round: this.round,
      reason,
      detail,
    };
    this.push({
      type: 'coordination',
      name: 'cancel',
      agent,
      parentSeq: this.roundSeq(),
      startedAt: e.timestamp * 1000,
      payload,
    });
  }

  private select(ts: number, winner: string, ctx: Record<string, unknown>): void {
    if (this.selectionDone) return;
    this.selectionDone = true;
    this.selectionTs = ts;
    this.winner = winner;
    this.closeRound(this.finalRoundStart ?? ts);
    const votes: Record<Label, number> = {};
    for (const { target } of this.standingVotes.values())
      votes[this.label(target)] = (votes[this.label(target)] ?? 0) + 1;
    const standing = [...this.standingVotes.values()];
    const payload: SelectionPayload & Record<string, unknown> = {
      winner_agent: winner,
      winner_label: this.label(winner),
      votes,
      consensus: standing.length === this.agents.length && standing.every((v) => v.target === winner),
      reason: standing.length ? 'votes' : this.answers.length ? 'no_votes' : 'no_answers',
      rounds: this.round,
      vote_summary: typeof ctx.vote_summary === 'string' ? ctx.vote_summary : null,
      massgen_answer_labels: Array.isArray(ctx.all_answers)
        ? ctx.all_answers
        : [...this.latest.values()].map((a) => a.massgenLabel),
    };
    this.push({
      type: 'coordination',
      name: 'final_selection',
      agent: winner,
      parentSeq: this.roundSeq(),
      startedAt: ts * 1000,
      payload,
    });

    const finalDir = this.finalDir(winner);
    const seen = new Map([...this.latest.values()].map((a) => [a.agent, a.massgenLabel]));
    const context: ContextMessagePayload = {
      turn_id: `${winner}#final`,
      kind: 'presentation',
      round: this.round,
      answer_labels_seen: this.labelsOf(seen),
      massgen_labels_seen: [...seen.values()],
      messages: null,
      source: null,
    };
    this.presentationContext = this.push({
      type: 'message',
      name: 'context',
      agent: winner,
      parentSeq: this.roundSeq(),
      startedAt: Math.max(ts, this.finalRoundStart ?? ts) * 1000,
      payload: context,
    });
    this.attachContext(winner, finalDir, this.presentationContext);
  }

  private present(e: MassgenEvent, winner: string): void {
    if (!this.selectionDone) this.select(this.finalRoundStart ?? e.timestamp, winner, e.context ?? {});
    const massgenLabel = typeof e.context?.label === 'string' ? e.context.label : `${this.label(winner)}.final`;
    const mapped = this.mappings?.[massgenLabel];
    const file = (mapped && this.inside(mapped.path)) ?? path.join(this.finalDir(winner), 'answer.txt');
    const content = this.reader.exists(file) ? this.text(file) : (this.latest.get(winner)?.content ?? '');
    // MassGen logs final_round_start just before final_agent_selected; the presentation spans both, up to final_answer.
    const start = Math.min(Math.max(this.finalRoundStart ?? e.timestamp, this.selectionTs ?? 0), e.timestamp);
    const payload: PresentationPayload & Record<string, unknown> = {
      content,
      prompt_seq: this.presentationContext !== null ? this.presentationContext + 1 : 0,
      massgen_label: massgenLabel,
      snapshot: this.reader.exists(file) ? this.reader.display(file) : null,
    };
    this.push({
      type: 'coordination',
      name: 'presentation',
      agent: winner,
      parentSeq: this.roundSeq(),
      startedAt: start * 1000,
      durationMs: (e.timestamp - start) * 1000,
      payload,
    });
    this.winner = winner;
    this.finalAnswer = content;
  }

  // ---------------------------------------------------------------- rounds

  private openRound(ts: number, trigger: RoundPayload['trigger']): void {
    const payload: RoundPayload = {
      round: this.round,
      answer_labels: this.agents.filter((a) => this.latest.has(a)).map((a) => this.label(a)),
      trigger,
    };
    this.roundIndex = this.push({ type: 'coordination', name: 'round', agent: null, startedAt: ts * 1000, payload });
  }

  private closeRound(ts: number): void {
    const span = this.spans[this.roundIndex];
    if (span && span.durationMs === undefined) span.durationMs = Math.max(0, ts * 1000 - (span.startedAt ?? 0));
  }

  private nextRound(ts: number): void {
    if (this.selectionDone) return;
    this.closeRound(ts);
    if (this.roundsOnRestartSignal) this.standingVotes.clear();
    this.round++;
    this.openRound(ts, 'new_answer');
  }

  // ---------------------------------------------------------------- helpers

  private push(span: SpanInput): number {
    this.spans.push(span);
    return this.spans.length - 1;
  }

  private roundSeq(): number | null {
    return this.roundIndex >= 0 ? this.roundIndex + 1 : null;
  }

  private contextSeq(agent: string): number {
    const i = this.contextSpan.get(agent);
    return i === undefined ? 0 : i + 1;
  }

  private label(agent: string): Label {
    return this.labels.get(agent) ?? agent;
  }

  private labelsOf(seen: Map<string, string>): Label[] {
    return this.agents.filter((a) => seen.has(a)).map((a) => this.label(a));
  }

  private agentOfLabel(massgenLabel: string): string | undefined {
    const n = /^agent(\d+)/.exec(massgenLabel)?.[1];
    return n === undefined ? undefined : this.agents[Number(n) - 1];
  }

  private turnId(agent: string): string {
    return `${agent}#${this.turns.get(agent) ?? 0}`;
  }

  private answerFromSelection(massgenLabel: string): string | null {
    for (const e of this.log.events) {
      const byLabel = e.context?.answers_for_context;
      if (isRecord(byLabel) && typeof byLabel[massgenLabel] === 'string') return byLabel[massgenLabel];
    }
    return null;
  }

  /** A path from snapshot_mappings.json, resolved inside the imported directory (never outside it). */
  private inside(rel: string): string | undefined {
    const abs = path.resolve(this.unit.dir, rel);
    const back = path.relative(this.unit.dir, abs);
    return back && !back.startsWith('..') && !path.isAbsolute(back) ? abs : undefined;
  }

  /**
   * The snapshot directory of an agent's k-th answer (or vote): from snapshot_mappings.json when
   * present, else the k-th timestamped directory of the agent holding that file.
   */
  private snapshotDir(agent: string, mappingKey: string, file: string, k: number): string | null {
    const mapped = this.mappings?.[mappingKey];
    if (mapped && mapped.agent_id === agent) {
      const abs = this.inside(mapped.path);
      if (abs) return path.dirname(abs);
    }
    const agentDir = path.join(this.unit.dir, agent);
    let names: string[];
    try {
      names = fs
        .readdirSync(agentDir)
        .filter((n) => SNAPSHOT_DIR.test(n))
        .sort();
    } catch {
      return null;
    }
    const withFile = names.filter((n) => fs.existsSync(path.join(agentDir, n, file)));
    const name = withFile[k - 1];
    return name ? path.join(agentDir, name) : null;
  }

  private finalDir(agent: string): string {
    return path.join(this.unit.dir, 'final', agent);
  }

  /** Fills the agent's current context span (or the given one) with the context.txt saved next to its action. */
  private attachContext(agent: string, dir: string, index = this.contextSpan.get(agent)): void {
    if (index === undefined) return;
    const span = this.spans[index]!;
    const payload = span.payload as ContextMessagePayload;
    if (payload.messages !== null) return;
    const file = path.join(dir, 'context.txt');
    if (!this.reader.exists(file)) return;
    const ctx = this.readContext(file);
    payload.messages = messagesOf(ctx);
    const tools = typeof ctx === 'string' ? [] : toolNames(ctx);
    if (tools.length) payload.tools = tools;
    payload.source = this.reader.display(file);
  }

  private readContext(file: string): ContextFile | string {
    const text = this.text(file);
    return text.trimStart().startsWith('{') ? this.reader.parseJson(file, text, contextFile, 'context.txt') : text;
  }

  private feedbackInSpans(): string | null {
    for (const s of this.spans) {
      const p = s.payload as Partial<ContextMessagePayload> | undefined;
      const user = p?.messages?.find((m) => m.role === 'user')?.content;
      const m = user ? FEEDBACK.exec(user) : null;
      if (m) return m[1]!.trim();
    }
    return null;
  }

  private promptText(file: string): string {
    try {
      return messagesOf(this.readContext(file))
        .map((m) => m.content)
        .join('\n');
    } catch (err) {
      if (err instanceof MassgenInputError) return ''; // reported by the attempt that owns the file
      throw err;
    }
  }

  /** The restart feedback the next attempt's agents were given (MassGen prepends it to their prompt). */
  private feedbackOf(attemptDir: string): string | null {
    try {
      for (const agent of fs.readdirSync(attemptDir, { withFileTypes: true })) {
        if (!agent.isDirectory() || agent.name === 'final') continue;
        const snaps = fs
          .readdirSync(path.join(attemptDir, agent.name))
          .filter((n) => SNAPSHOT_DIR.test(n))
          .sort();
        for (const s of snaps) {
          const file = path.join(attemptDir, agent.name, s, 'context.txt');
          if (!this.reader.exists(file)) continue;
          const m = FEEDBACK.exec(this.promptText(file));
          if (m) return m[1]!.trim();
        }
      }
    } catch {
      // The next attempt reports its own problems; here the feedback is only a nicety.
    }
    return null;
  }
}

function messagesOf(ctx: ContextFile | string): { role: string; content: string }[] {
  if (typeof ctx === 'string') return [{ role: 'user', content: ctx }];
  if (ctx.messages)
    return ctx.messages.map((m) => ({
      role: m.role,
      content: typeof m.content === 'string' ? m.content : JSON.stringify(m.content),
    }));
  const out: { role: string; content: string }[] = [];
  if (ctx.system_message !== undefined) out.push({ role: 'system', content: ctx.system_message });
  if (ctx.user_message !== undefined) out.push({ role: 'user', content: ctx.user_message });
  return out;
}

function toolNames(ctx: ContextFile): string[] {
  return (ctx.tools ?? []).flatMap((t) => {
    if (!isRecord(t)) return [];
    const fn = isRecord(t.function) ? t.function : t;
    return typeof fn.name === 'string' ? [fn.name] : [];
  });
}
