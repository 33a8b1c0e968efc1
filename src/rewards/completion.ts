/** One completion scored on its own (online GRPO samples, collect.samples_per_turn samples). */
import { implicitAction, parseTextAction } from '../orchestrator/text-protocol.js';
import type { Task } from '../tasks/types.js';
import { computeRewards, type RewardResult } from './compute.js';
import { REWARD_REGISTRY } from './registry.js';
import type { RewardContext, RewardsConfig, RolloutOutcome } from './types.js';

/** The families that score one answer on its own (scope `answer`), in registry order. */
export const SINGLE_ANSWER_FAMILIES: readonly string[] = REWARD_REGISTRY.filter((f) => f.scope === 'answer').map(
  (f) => f.name,
);

/** rewards.weights restricted to SINGLE_ANSWER_FAMILIES with a non-zero weight. */
export function singleAnswerWeights(weights: RewardsConfig['weights']): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of SINGLE_ANSWER_FAMILIES) {
    const w = weights[name as keyof typeof weights] ?? 0;
    if (w !== 0) out[name] = w;
  }
  return out;
}

export type CompletionAction =
  { kind: 'answer'; content: string } | { kind: 'vote' } | { kind: 'invalid'; detail: string };

/**
 * A sampled completion read with the orchestrator's text protocol: `ANSWER: …`, `VOTE: agentN | …`, or
 * free text, which counts as the answer (as for agents with implicit_answer). Several actions, an empty
 * ANSWER:, a VOTE: without a label or an empty reply break the protocol.
 */
export function completionAction(text: string): CompletionAction {
  const parsed = parseTextAction(text);
  if (parsed.ok)
    return parsed.action.kind === 'vote' ? { kind: 'vote' } : { kind: 'answer', content: parsed.action.content };
  if (parsed.kind !== 'no_action') return { kind: 'invalid', detail: parsed.detail };
  // No answers are in play here, so this never turns free text into a vote.
  const action = implicitAction(text, new Map(), true);
  return action?.kind === 'answer'
    ? { kind: 'answer', content: action.content }
    : { kind: 'invalid', detail: 'empty completion' };
}

export interface CompletionInput {
  /** Names the synthesized rollout (what a custom reward command sees as rolloutId). */
  id: string;
  text: string;
  task: Task;
  agent: string;
}

/**
 * The weighted total of the single-answer families for one completion, scored as a one-agent rollout
 * whose final answer is the completion's answer; a completion that breaks the protocol is a rollout
 * that failed without an answer (0 for the reference families). Null for a vote, or when no family
 * scored (e.g. no reference and no judge or custom family). A family that cannot compute throws a
 * RewardError (see computeRewards).
 */
export async function scoreCompletion(
  input: CompletionInput,
  ctx: Omit<RewardContext, 'outcome'>,
  weights: Record<string, number>,
): Promise<number | null> {
  const result = await completionRewards(input, ctx, weights);
  return result && Object.keys(result.byFamily).length ? result.total : null;
}

/** scoreCompletion's rewards, family by family (null for a vote). */
export async function completionRewards(
  input: CompletionInput,
  ctx: Omit<RewardContext, 'outcome'>,
  weights: Record<string, number>,
): Promise<RewardResult | null> {
  const action = completionAction(input.text);
  if (action.kind === 'vote') return null;
  const answer = action.kind === 'answer' ? action.content : null;
  const { agent } = input;
  const outcome: RolloutOutcome = {
    rolloutId: input.id,
    task: input.task,
    status: answer === null ? 'failed' : 'completed',
    agents: [agent],
    labels: { [agent]: 'agent1' },
    finalAnswer: answer,
    winner: answer === null ? null : agent,
    consensus: false,
    rounds: 1,
    tokens: 0,
    answers: answer === null ? [] : [{ agent, label: 'agent1', content: answer, round: 1, seq: 1 }],
    votes: [],
    toolCalls: [],
  };
  return computeRewards({ ...ctx, outcome }, weights);
}
