/**
 * The trace vocabulary: span names and payload shapes the orchestrator writes. Rewards, datasets,
 * exports and importers read traces through these types only.
 */
export const COORDINATION_SPANS = [
  'round', 'new_answer', 'vote', 'invalid_action', 'cancel', 'drop', 'restart', 'final_selection', 'presentation',
  'policy_decision',
] as const;
export type CoordinationSpan = (typeof COORDINATION_SPANS)[number];

/** `agent1`…`agentN`: anonymous answer labels by registration order, used in prompts, votes, traces and results. */
export type Label = string;

export interface PromptPayload {
  turn_id: string;
  round: number;
  attempt: number;
  request: { model: string; messages: unknown[]; temperature?: number; max_tokens?: number; tools?: readonly unknown[]; seed?: number };
  response: { content: string | null; tool_calls: unknown[]; finish_reason: string } | null;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  latency_ms: number;
  logprobs?: { token: string; logprob: number }[] | null;
  token_ids?: number[] | null;
  prompt_token_ids?: number[] | null;
  cancelled?: boolean;
  error?: string;
  /** On `sample` spans (collect.samples_per_turn): which extra sample of the decision this is, from 1. */
  sample_index?: number;
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
}

export type InvalidKind =
  | 'no_action' | 'multiple_actions' | 'vote_and_answer' | 'vote_before_answer' | 'unknown_target'
  | 'duplicate_answer' | 'not_novel' | 'answer_limit' | 'malformed';

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
  reason: 'votes' | 'no_votes' | 'no_answers';
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
