import { emptyUsage } from './llm-call.js';
import { present } from './presentation.js';
import type { CancelPayload, DropPayload, NewAnswerPayload, RoundPayload, SelectionPayload, VotePayload } from './trace-types.js';
import { stopSignal, type Stop } from './stop.js';
import { runTurn, type TurnOutcome } from './turn.js';
import type { OrchestrationResult, OrchestratorConfig, TeamAgent, ToolRunner, TraceSink } from './types.js';
import { selectWinner } from './winner.js';

export interface OrchestrateInput {
  task: string;
  team: TeamAgent[];
  config: OrchestratorConfig;
  sink: TraceSink;
  tools: ToolRunner;
  /** Interrupts the whole orchestration (Ctrl-C): running calls are cancelled. */
  signal?: AbortSignal;
}

// Abort reasons, made once: an Error per cancel captures an (async) stack trace nobody reads, since a
// cancelled call is recorded as cancelled, not by its error.
const CANCELLED: Record<CancelPayload['reason'], Error> = {
  superseded: new Error('superseded by a new answer'),
  total_timeout: new Error('total timeout'),
  interrupted: new Error('interrupted'),
};

interface Running {
  promise: Promise<{ agent: TeamAgent; outcome: TurnOutcome; version: number; round: number; turnId: string }>;
  controller: AbortController;
  version: number;
  round: number;
  turnId: string;
}

/**
 * MassGen's coordination protocol. Agents work in parallel; each turn ends in one action, new_answer or
 * vote. A new answer resets all votes and cancels every other running turn, which restarts on the new
 * answer set. Coordination ends when every live agent holds a vote for the current answer set.
 */
export async function orchestrate(input: OrchestrateInput): Promise<OrchestrationResult> {
  const stop = stopSignal(input.config.total_timeout_s * 1000, input.signal);
  try {
    return await coordinate(input, stop);
  } finally {
    stop.dispose();
  }
}

async function coordinate(input: OrchestrateInput, stopper: Stop): Promise<OrchestrationResult> {
  const started = performance.now();
  const { team, config, sink } = input;
  const labels = Object.fromEntries(team.map((a) => [a.id, a.label]));
  const result: OrchestrationResult = {
    status: 'completed', winner: null, winnerLabel: null, finalAnswer: null, consensus: false, rounds: 0, restarts: 0, timedOut: false,
    labels, answers: [], votes: [], dropped: [], toolCalls: [], usage: emptyUsage(), wallMs: 0,
  };
  const stop = stopper.signal;
  let running = new Map<string, Running>();
  // Running turns stop with the orchestration (each turn has its own controller, see stop.ts).
  stop.addEventListener('abort', () => {
    for (const r of running.values()) r.controller.abort(stop.reason);
  }, { once: true });
  let task = input.task;
  let turnCounter = 0;
  const abandoned: Promise<unknown>[] = [];

  for (let restart = 0; ; restart++) {
    const answers = new Map<string, { content: string; round: number; seq: number }>();
    const votes = new Map<string, { target: string; reason: string; round: number; seq: number }>();
    const dropped = new Set<string>();
    const answerCounts = new Map<string, number>();
    running = new Map<string, Running>();
    let version = 0;
    let roundSeq = openRound(sink, ++result.rounds, [], restart ? 'restart' : 'start');

    const live = () => team.filter((a) => !dropped.has(a.id));
    const answerView = () => new Map(team.filter((a) => answers.has(a.id)).map((a) => [a.label, answers.get(a.id)!.content]));
    const canAnswer = (a: TeamAgent) => result.rounds < config.max_rounds && (config.max_new_answers_per_agent === undefined || (answerCounts.get(a.id) ?? 0) < config.max_new_answers_per_agent);
    const cancel = (agentId: string, reason: CancelPayload['reason']) => {
      const r = running.get(agentId);
      if (!r) return;
      r.controller.abort(CANCELLED[reason]);
      running.delete(agentId);
      abandoned.push(r.promise);
      sink.span({ type: 'coordination', name: 'cancel', agent: agentId, parentSeq: roundSeq, payload: { turn_id: r.turnId, round: r.round, reason } satisfies CancelPayload });
    };

    while (!stop.aborted) {
      const agents = live();
      if (!agents.length || agents.every((a) => votes.has(a.id))) break;
      for (const agent of agents) {
        if (votes.has(agent.id) || running.has(agent.id)) continue;
        const controller = new AbortController();
        const turnId = `t${++turnCounter}`;
        const ctx = { agent, task, snapshot: { answers: answerView(), canAnswer: canAnswer(agent) }, teamSize: team.length, config, sink, tools: input.tools, usage: result.usage, toolLog: result.toolCalls, round: result.rounds, roundSeq, turnId, controller };
        const v = version;
        const round = result.rounds;
        running.set(agent.id, { controller, version: v, round, turnId, promise: runTurn(ctx).then((outcome) => ({ agent, outcome, version: v, round, turnId })) });
      }
      const settled = await Promise.race([...running.values()].map((r) => r.promise));
      if (stop.aborted) break;
      const current = running.get(settled.agent.id);
      if (!current || current.turnId !== settled.turnId) continue; // cancelled and already replaced
      running.delete(settled.agent.id);
      const { agent, outcome } = settled;
      if (outcome.kind === 'cancelled' || settled.version !== version) continue;
      if (outcome.kind === 'drop') {
        dropped.add(agent.id);
        result.dropped.push({ agent: agent.id, kind: outcome.dropKind, reason: outcome.reason });
        sink.span({ type: 'coordination', name: 'drop', agent: agent.id, parentSeq: roundSeq, payload: { kind: outcome.dropKind, reason: outcome.reason, round: result.rounds } satisfies DropPayload });
        continue;
      }
      const seen = [...answerView().keys()];
      const action = outcome.action;
      if (action.kind === 'vote') {
        const target = team.find((a) => a.label === action.target)!;
        const payload: VotePayload = { turn_id: settled.turnId, voter_label: agent.label, target_label: target.label, target_agent: target.id, reason: action.reason, round: result.rounds, answer_labels_seen: seen, prompt_seq: outcome.promptSeq, ...(action.implicit ? { implicit: true } : {}) };
        const seq = sink.span({ type: 'coordination', name: 'vote', agent: agent.id, parentSeq: roundSeq, payload });
        votes.set(agent.id, { target: target.id, reason: payload.reason, round: result.rounds, seq });
        continue;
      }
      const content = action.content;
      const payload: NewAnswerPayload = { turn_id: settled.turnId, label: agent.label, content, round: result.rounds, answer_labels_seen: seen, prompt_seq: outcome.promptSeq, ...(action.implicit ? { implicit: true } : {}) };
      const seq = sink.span({ type: 'coordination', name: 'new_answer', agent: agent.id, parentSeq: roundSeq, payload });
      answers.set(agent.id, { content, round: result.rounds, seq });
      answerCounts.set(agent.id, (answerCounts.get(agent.id) ?? 0) + 1);
      result.answers.push({ agent: agent.id, label: agent.label, content, round: result.rounds, seq });
      version++;
      votes.clear();
      for (const other of [...running.keys()]) cancel(other, 'superseded');
      roundSeq = openRound(sink, ++result.rounds, [...answerView().keys()], 'new_answer');
    }
    for (const agentId of [...running.keys()]) cancel(agentId, input.signal?.aborted ? 'interrupted' : 'total_timeout');
    result.timedOut = stopper.expired;
    if (input.signal?.aborted) {
      result.status = 'cancelled';
      break;
    }
    const selection = selectWinner(team, answers, votes);
    result.votes = [...votes].map(([voter, v]) => ({ voter, ...v }));
    result.consensus = selection.reason === 'votes' && live().length > 0 && live().every((a) => votes.has(a.id));
    sink.span({ type: 'coordination', name: 'final_selection', agent: selection.winner?.id ?? null, parentSeq: roundSeq, payload: { winner_agent: selection.winner?.id ?? null, winner_label: selection.winner?.label ?? null, votes: selection.counts, consensus: result.consensus, reason: selection.reason, rounds: result.rounds } satisfies SelectionPayload });
    if (!selection.winner) {
      result.status = 'failed';
      result.error = result.dropped.length ? `no answers: ${result.dropped.map((d) => `${d.agent} dropped (${d.reason})`).join('; ')}` : 'no answers';
      break;
    }
    result.winner = selection.winner.id;
    result.winnerLabel = selection.winner.label;
    const final = await present({ winner: selection.winner, task, team, answers, votes, config, sink, usage: result.usage, roundSeq, round: result.rounds, signal: stop, restartsLeft: config.max_orchestration_restarts - restart });
    result.finalAnswer = final.answer;
    if (!final.restartFeedback) break;
    result.restarts++;
    task = `${input.task}\n\nFeedback on a previous attempt: ${final.restartFeedback}`;
  }
  // Cancelled turns finish recording their (cancelled) calls before the trace is closed.
  await Promise.allSettled(abandoned);
  result.wallMs = performance.now() - started;
  return result;
}

function openRound(sink: TraceSink, round: number, labels: string[], trigger: RoundPayload['trigger']): number {
  return sink.span({ type: 'coordination', name: 'round', agent: null, payload: { round, answer_labels: labels, trigger } satisfies RoundPayload });
}
