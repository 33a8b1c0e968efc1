import type { OrchestrationResult } from '../orchestrator/types.js';
import { samplesOf } from '../rewards/samples.js';
import type { RolloutOutcome } from '../rewards/types.js';
import type { Task } from '../tasks/types.js';
import {
  nestedDepth,
  type NewAnswerPayload,
  type SelectionPayload,
  type ToolPayload,
  type VotePayload,
} from '../trace/payloads.js';
import type { Rollout, Span } from '../trace/records.js';

/** The reward view of a live orchestration. */
export function outcomeFromResult(
  rolloutId: string,
  task: Task | null,
  agents: string[],
  r: OrchestrationResult,
): RolloutOutcome {
  return {
    rolloutId,
    task,
    status: r.status,
    agents,
    labels: r.labels,
    finalAnswer: r.finalAnswer,
    winner: r.winner,
    consensus: r.consensus,
    rounds: r.rounds,
    tokens: r.usage.totalTokens,
    answers: r.answers.map((a) => ({ ...a })),
    votes: r.votes.map((v) => ({ ...v })),
    toolCalls: r.toolCalls.map((t) => ({ ...t })),
  };
}

/**
 * The same view rebuilt from stored spans, so rewards can be recomputed without re-running agents.
 * The final votes are those of the last round that has votes before the (last) final selection.
 * Spans of child orchestrations (delegation) are not the team's own and are skipped.
 */
export function outcomeFromSpans(rollout: Rollout, spans: Span[], task: Task | null): RolloutOutcome {
  const labels: Record<string, string> = {};
  const answers: RolloutOutcome['answers'] = [];
  let votes: RolloutOutcome['votes'] = [];
  const toolCalls: RolloutOutcome['toolCalls'] = [];
  let selection: SelectionPayload | undefined;
  let rounds = 0;
  for (const s of spans) {
    if (nestedDepth(s.payload) > 0) continue;
    if (s.type === 'coordination' && s.name === 'round') rounds++;
    if (s.type === 'coordination' && s.name === 'new_answer' && s.agent) {
      const p = s.payload as NewAnswerPayload;
      labels[s.agent] = p.label;
      answers.push({ agent: s.agent, label: p.label, content: p.content, round: p.round, seq: s.seq });
    }
    if (s.type === 'coordination' && s.name === 'vote' && s.agent) {
      const p = s.payload as VotePayload;
      labels[s.agent] = p.voter_label;
      labels[p.target_agent] = p.target_label;
      votes = votes.filter((v) => v.round === p.round && v.voter !== s.agent);
      const vote = { voter: s.agent, target: p.target_agent, reason: p.reason, round: p.round, seq: s.seq };
      votes.push(p.repeats ? { ...vote, repeats: true } : vote);
    }
    if (s.type === 'coordination' && s.name === 'final_selection') selection = s.payload as SelectionPayload;
    if (s.type === 'tool' && s.agent)
      toolCalls.push({
        agent: s.agent,
        name: (s.payload as ToolPayload).name,
        success: (s.payload as ToolPayload).success,
        seq: s.seq,
      });
  }
  const metaAgents = rollout.metadata.agents;
  const agents = Array.isArray(metaAgents)
    ? (metaAgents as string[])
    : [...new Set(spans.map((s) => s.agent).filter((a): a is string => Boolean(a)))];
  const metaLabels = rollout.metadata.labels;
  return {
    samples: samplesOf(spans),
    rolloutId: rollout.id,
    task,
    status: rollout.status === 'running' ? 'failed' : rollout.status,
    agents,
    labels: {
      ...labels,
      ...(metaLabels && typeof metaLabels === 'object' ? (metaLabels as Record<string, string>) : {}),
    },
    finalAnswer: rollout.finalAnswer,
    winner: rollout.winner,
    consensus: selection?.consensus ?? false,
    rounds,
    tokens: rollout.tokens,
    answers,
    votes,
    toolCalls,
  };
}
