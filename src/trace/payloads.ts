/**
 * The trace vocabulary: span names and payload shapes the orchestrator writes. Rewards, datasets,
 * exports and importers read traces through these types only.
 */
export const COORDINATION_SPANS = [
  'round',
  'new_answer',
  'vote',
  'invalid_action',
  'cancel',
  'drop',
  'restart',
  'final_selection',
  'presentation',
  'policy_decision',
  'delegate',
  'delegate_return',
  'delegate_aggregate',
] as const;
export type CoordinationSpan = (typeof COORDINATION_SPANS)[number];

/** `agent1`…`agentN`: anonymous answer labels by registration order, used in prompts, votes, traces and results. */
export type Label = string;

export interface PromptPayload {
  turn_id: string;
  round: number;
  attempt: number;
  request: {
    model: string;
    messages: unknown[];
    temperature?: number;
    max_tokens?: number;
    tools?: readonly unknown[];
    seed?: number;
  };
  response: { content: string | null; tool_calls: unknown[]; finish_reason: string } | null;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  latency_ms: number;
  /** Time to first token of a streamed call (models.*.stream): ms from the request to its first content. */
  ttft_ms?: number;
  logprobs?: { token: string; logprob: number }[] | null;
  token_ids?: number[] | null;
  prompt_token_ids?: number[] | null;
  cancelled?: boolean;
  error?: string;
  /** On `sample` spans (collect.samples_per_turn): which extra sample of the decision this is, from 1. */
  sample_index?: number;
  /** On calls the gateway captured: who sent it, the backend that answered, and how. */
  gateway?: GatewayCallInfo;
}

export interface GatewayCallInfo {
  /** The client key's environment variable (`loopback` without keys). */
  client: string;
  /** The config model the request named, and the model name its backend reported. */
  backend: string;
  backend_model: string;
  stream: boolean;
  /** The HTTP status the client got (499: it closed the connection first). */
  status: number;
  /** The production resource set when the call was stored (older captures: absent). */
  resource_set_id?: string | null;
  /** The client's system prompt replaced by the agent's (gateway.agents.<id>.system_prompt: production). */
  system_prompt?: GatewaySystemPrompt;
}

/** A replaced system prompt: `request.messages` holds what the backend got. */
export interface GatewaySystemPrompt {
  replaced: true;
  /** The prompt resource sent, `name@version`, and the resource set it came from. */
  resource: string;
  set_id: string;
  /** The system messages the client sent and the gateway dropped (0: the prompt was prepended). */
  client_messages: number;
}

export interface ToolPayload {
  turn_id: string;
  name: string;
  args: unknown;
  result: string | null;
  success: boolean;
  error?: string;
}

export interface RoundPayload {
  round: number;
  /** Labels of the answers every agent sees in this round. */
  answer_labels: Label[];
  trigger: 'start' | 'new_answer' | 'restart';
}

export interface NewAnswerPayload {
  turn_id: string;
  label: Label;
  content: string;
  round: number;
  answer_labels_seen: Label[];
  prompt_seq: number;
  /** Read from a reply without an action line (agents with implicit_answer). */
  implicit?: boolean;
}

export interface VotePayload {
  turn_id: string;
  voter_label: Label;
  target_label: Label;
  target_agent: string;
  reason: string;
  round: number;
  answer_labels_seen: Label[];
  prompt_seq: number;
  implicit?: boolean;
  /** An independent answer whose final answer another agent had already given, recorded as a vote for it. */
  repeats?: boolean;
}

export type InvalidKind =
  | 'no_action'
  | 'multiple_actions'
  | 'vote_and_answer'
  | 'vote_before_answer'
  | 'unknown_target'
  | 'duplicate_answer'
  | 'not_novel'
  | 'answer_limit'
  | 'malformed';

export interface InvalidActionPayload {
  turn_id: string;
  kind: InvalidKind;
  detail: string;
  correction: string;
  attempt: number;
}

export interface CancelPayload {
  turn_id: string;
  round: number;
  reason: 'superseded' | 'total_timeout' | 'interrupted';
}

export interface DropPayload {
  kind: 'timeout' | 'invalid_actions' | 'error';
  reason: string;
  round: number;
}

export interface SelectionPayload {
  winner_agent: string | null;
  winner_label: Label | null;
  votes: Record<Label, number>;
  consensus: boolean;
  reason: 'votes' | 'no_votes' | 'agreement' | 'no_answers';
  rounds: number;
}

export interface PresentationPayload {
  content: string;
  prompt_seq: number;
}

export interface RestartPayload {
  restart: number;
  feedback: string;
}

/**
 * A learned policy's decision (or, before any policy exists, a uniformly explored one): what it saw, the
 * arms it could take, the one drawn and with what probability, so the policy is evaluated off-policy.
 */
export interface PolicyDecisionPayload {
  policy: 'routing' | 'stop' | 'tool' | 'delegate';
  /** The policy resource (null: uniform exploration while production has no policy for this decision). */
  policy_id: string | null;
  policy_version: number | null;
  algorithm: string;
  /** The policy's arms, and those open in this decision (tool: the agent's own tools). */
  arms: string[];
  available: string[];
  chosen: string;
  /** Index of `chosen` in `arms`. */
  arm: number;
  /** The probability the decision had of drawing `chosen`: the logging propensity. */
  propensity: number;
  probabilities: number[];
  epsilon: number;
  explore: boolean;
  feature_names_hash: string;
  features: number[];
  seed: number;
  /** Stop: the round that ended; tool: the agent offered the tools. */
  round?: number;
  agent?: string;
}

/*
 * Hierarchical delegation (orchestrator/delegation.ts). An agent's `delegate` tool call runs a child
 * orchestration on a subtask; its spans are written into the same rollout:
 *
 *   delegate            (agent: the delegating agent, parent: the prompt span that called the tool)
 *     every span of the child orchestration: the child's rounds hang under the delegate span (the rest
 *     under them, as usual), and each payload carries NestedMark {depth, delegate_seq} — prompt and
 *     tool spans included. Spans without it belong to the team itself (depth 0). Readers of the team's
 *     own trace (rewards from spans, datasets' actions) skip marked spans.
 *   delegate_return     (parent: the delegate span) what came back, then the usual `tool` span `delegate`
 *                       with the answer as its result
 *   delegate_aggregate  once the level that delegated has its final answer (after its presentation;
 *                       parent: its last final_selection): how much it used each returned answer.
 *
 * use = |words(returned answer) ∩ words(final answer)| / |words(returned answer)|, over distinct
 * lower-cased letter/digit words (validate.ts wordSet); 0 when the level has no final answer or the
 * returned answer is empty. Credit (rewards/delegation-credit.ts) multiplies the uses along the chain
 * of levels up to the team and by the rollout's outcome.
 */

/** On every span of a child orchestration: its depth (1 under the team) and the delegate span that opened it. */
export interface NestedMark {
  depth: number;
  delegate_seq: number;
}

/** The depth of the orchestration a span belongs to: 0 for the team's own spans. */
export function nestedDepth(payload: unknown): number {
  const depth = payload && typeof payload === 'object' ? (payload as Partial<NestedMark>).depth : undefined;
  return typeof depth === 'number' && depth > 0 ? depth : 0;
}

export interface DelegatePayload {
  /** The delegating agent's turn and the prompt span whose reply called the tool. */
  turn_id: string;
  prompt_seq: number;
  agent: string;
  label: Label;
  /** The subtask. */
  task: string;
  /** Depth of the child orchestration (the delegating level's depth + 1). */
  child_depth: number;
  shape: 'team' | 'solo';
  /** Agent ids of the child team, in its registration order (its labels are agent1…agentN). */
  child_agents: string[];
  /** Which delegation of the whole orchestration this is, from 1 (bounded by max_delegations). */
  ordinal: number;
}

export interface DelegateReturnPayload {
  turn_id: string;
  delegate_seq: number;
  child_depth: number;
  status: 'completed' | 'cancelled' | 'failed';
  /** Why the child stopped early: its token budget (max_child_tokens) or its total timeout; null otherwise. */
  stopped: 'token_budget' | 'timeout' | null;
  /** The child's presented final answer (its winner's answer when stopped), returned as the tool result. */
  final_answer: string | null;
  winner_agent: string | null;
  winner_label: Label | null;
  rounds: number;
  /** Tokens of the child orchestration, its own children included. */
  tokens: number;
  error?: string;
}

/** One returned answer as the level that asked for it used it. */
export interface DelegationUse {
  delegate_seq: number;
  return_seq: number;
  agent: string;
  child_depth: number;
  use: number;
}

export interface DelegateAggregatePayload {
  /** The level's winner, who presented its final answer (null without one). */
  winner_agent: string | null;
  /** The presentation span of that final answer (null without one). */
  presentation_seq: number | null;
  returns: DelegationUse[];
}
