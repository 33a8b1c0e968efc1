import type { PresentationPayload, RestartPayload } from '../trace/payloads.js';
import { recordedCall, type Usage } from './llm-call.js';
import { presentationMessages, reviewMessages } from './prompts.js';
import type { OrchestratorConfig, TeamAgent, TraceSink } from './types.js';

export interface PresentInput {
  winner: TeamAgent;
  task: string;
  team: TeamAgent[];
  answers: Map<string, { content: string }>;
  votes: Map<string, { target: string; reason: string }>;
  config: OrchestratorConfig;
  sink: TraceSink;
  usage: Usage;
  roundSeq: number;
  round: number;
  signal: AbortSignal;
  restartsLeft: number;
  /** The system prompt of the presentation (absent: the winner's own). */
  presenterPrompt?: string;
  /** False: the winner's answer is the final answer as it stands (the answers layout: a small model garbles a presentation). */
  callModel?: boolean;
}

/**
 * The winner presents the final answer, seeing every answer and the vote reasons. With restarts left,
 * it then reviews the result and may ask for a restart with feedback.
 */
export async function present(p: PresentInput): Promise<{ answer: string; restartFeedback?: string }> {
  const fallback = p.answers.get(p.winner.id)!.content;
  const labelled = new Map(
    p.team.filter((a) => p.answers.has(a.id)).map((a) => [a.label, p.answers.get(a.id)!.content]),
  );
  const votes = [...p.votes].map(([voter, v]) => ({
    voterLabel: p.team.find((a) => a.id === voter)!.label,
    target: p.team.find((a) => a.id === v.target)!.label,
    reason: v.reason,
  }));
  const site = {
    agent: p.winner,
    sink: p.sink,
    usage: p.usage,
    turnId: 'presentation',
    round: p.round,
    parentSeq: p.roundSeq,
    signal: p.signal,
    name: 'presentation',
  };
  let answer = fallback;
  let promptSeq = -1;
  if (p.callModel !== false) {
    try {
      const { result, seq } = await recordedCall(
        site,
        presentationMessages(p.winner, p.task, labelled, votes, p.presenterPrompt),
        1,
      );
      promptSeq = seq;
      if (result.content?.trim()) answer = result.content.trim();
    } catch {
      // The winner's own answer stands when the presentation call fails; the failed call is in the trace.
    }
  }
  p.sink.span({
    type: 'coordination',
    name: 'presentation',
    agent: p.winner.id,
    parentSeq: p.roundSeq,
    payload: { content: answer, prompt_seq: promptSeq } satisfies PresentationPayload,
  });
  if (p.restartsLeft <= 0) return { answer };
  try {
    const { result } = await recordedCall(
      { ...site, turnId: 'review', name: 'review' },
      reviewMessages(p.winner, p.task, answer),
      1,
    );
    const m = /RESTART\s*:?\s*(.*)/is.exec(result.content ?? '');
    if (!m || /^\s*CONFIRM/i.test(result.content ?? '')) return { answer };
    const feedback = m[1]!.trim() || 'the final answer was judged incomplete';
    p.sink.span({
      type: 'coordination',
      name: 'restart',
      agent: p.winner.id,
      parentSeq: p.roundSeq,
      payload: { restart: p.config.max_orchestration_restarts - p.restartsLeft + 1, feedback } satisfies RestartPayload,
    });
    return { answer, restartFeedback: feedback };
  } catch {
    return { answer };
  }
}
