import type { SelectionPayload } from '../trace/payloads.js';
import { Attempt, type Settled } from './attempt.js';
import { orchestrateDelegating } from './delegation.js';
import { emptyUsage } from './llm-call.js';
import { present } from './presentation.js';
import { usesAnswersLayout } from './prompts.js';
import { stopSignal, type Stop } from './stop.js';
import type { OrchestrateInput, OrchestrationResult } from './types.js';

export type { OrchestrateInput };
import { selectWinner } from './winner.js';

/**
 * MassGen's coordination protocol. Agents work in parallel; each turn ends in one action, new_answer or
 * vote. A new answer resets all votes and cancels every other running turn, which restarts on the new
 * answer set. Coordination ends when every live agent holds a vote for the current answer set.
 */
export async function orchestrate(input: OrchestrateInput): Promise<OrchestrationResult> {
  const stop = stopSignal(input.config.total_timeout_s * 1000, input.signal);
  try {
    return await (input.delegation?.enabled
      ? orchestrateDelegating(input, input.delegation, stop, coordinate)
      : coordinate(input, stop));
  } finally {
    stop.dispose();
  }
}

// The per-turn work lives in Attempt's small methods; this function runs once or twice per orchestration.
async function coordinate(input: OrchestrateInput, stop: Stop): Promise<OrchestrationResult> {
  const started = performance.now();
  const { team, config, sink } = input;
  const result: OrchestrationResult = {
    status: 'completed',
    winner: null,
    winnerLabel: null,
    finalAnswer: null,
    consensus: false,
    rounds: 0,
    restarts: 0,
    timedOut: false,
    labels: Object.fromEntries(team.map((a) => [a.id, a.label])),
    answers: [],
    votes: [],
    dropped: [],
    toolCalls: [],
    usage: emptyUsage(),
    wallMs: 0,
  };
  const abandoned: Promise<Settled>[] = [];
  let attempt: Attempt | undefined;
  // Running turns stop with the orchestration (each turn has its own controller, see stop.ts).
  stop.signal.addEventListener('abort', () => attempt?.abortAll(stop.signal.reason), { once: true });
  let task = input.task;
  let turns = 0;
  for (let restart = 0; ; restart++) {
    attempt = new Attempt({ ...input, task }, result, abandoned, turns, restart > 0);
    await attempt.run(stop.signal);
    turns = attempt.turnCounter;
    attempt.cancelAll(input.signal?.aborted ? 'interrupted' : 'total_timeout');
    result.timedOut = stop.expired;
    if (input.signal?.aborted) {
      result.status = 'cancelled';
      break;
    }
    const { answers, votes } = attempt;
    const selection = selectWinner(team, answers, votes, { byAgreement: result.stoppedAfterRound !== undefined });
    result.votes = [...votes].map(([voter, v]) => ({ voter, ...v }));
    const live = attempt.live();
    result.consensus = selection.reason === 'votes' && live.length > 0 && live.every((a) => votes.has(a.id));
    sink.span({
      type: 'coordination',
      name: 'final_selection',
      agent: selection.winner?.id ?? null,
      parentSeq: attempt.seq,
      payload: {
        winner_agent: selection.winner?.id ?? null,
        winner_label: selection.winner?.label ?? null,
        votes: selection.counts,
        consensus: result.consensus,
        reason: selection.reason,
        rounds: result.rounds,
      } satisfies SelectionPayload,
    });
    if (!selection.winner) {
      result.status = 'failed';
      result.error = result.dropped.length
        ? `no answers: ${result.dropped.map((d) => `${d.agent} dropped (${d.reason})`).join('; ')}`
        : 'no answers';
      break;
    }
    result.winner = selection.winner.id;
    result.winnerLabel = selection.winner.label;
    const final = await present({
      winner: selection.winner,
      task,
      team,
      answers,
      votes,
      config,
      sink,
      usage: result.usage,
      roundSeq: attempt.seq,
      round: result.rounds,
      signal: stop.signal,
      restartsLeft: config.max_orchestration_restarts - restart,
      presenterPrompt: input.presenterPrompt,
      callModel: !usesAnswersLayout(selection.winner, config.prompt_layout),
    });
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
