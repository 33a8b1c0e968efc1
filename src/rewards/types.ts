import type { RLConfig } from '../config/schema.js';
import type { LlmClient } from '../llm/types.js';
import type { Task } from '../tasks/types.js';
import type { RewardInput } from '../trace/records.js';

/** What a reward family sees of one orchestration: derivable both from a live run and from stored spans. */
export interface RolloutOutcome {
  rolloutId: string;
  task: Task | null;
  status: 'completed' | 'failed' | 'cancelled';
  /** Agent ids in registration order. */
  agents: string[];
  labels: Record<string, string>;
  finalAnswer: string | null;
  winner: string | null;
  consensus: boolean;
  rounds: number;
  tokens: number;
  /** Every answer given, superseded ones included, in order; seq is the new_answer span. */
  answers: { agent: string; label: string; content: string; round: number; seq: number }[];
  /** The extra samples of each decision (collect.samples_per_turn), seq = the sample span; none without them. */
  samples?: { agent: string; content: string; seq: number }[];
  /**
   * Answers other rollouts gave to the same prompt (captured sessions grouped by their prompt): agreement counts
   * them toward the majority and scores only this rollout's own.
   */
  peers?: string[];
  /** The votes that ended coordination (the quiescent round). */
  /** repeats: the voter's own answer, the same final answer as the target's (an independent layout's agreement). */
  votes: { voter: string; target: string; reason: string; round: number; seq: number; repeats?: boolean }[];
  toolCalls: { agent: string; name: string; success: boolean; seq: number }[];
}

export type RewardsConfig = RLConfig['rewards'];

/**
 * Tokens spent computing rewards. Families that call a model (the judge) add to it; computeRewards
 * creates one when the context has none and returns `judgeTokens`, which the caller adds to the
 * rollout's token cost.
 */
export interface RewardUsage {
  judgeTokens: number;
  judgeCalls: number;
}

export interface RewardContext {
  outcome: RolloutOutcome;
  config: RewardsConfig;
  /** The judge model's client, when rewards.judge.model is set. */
  judge?: { client: LlmClient; model: string };
  signal?: AbortSignal;
  /** Usage accumulator for reward-time model calls (see RewardUsage). */
  usage?: RewardUsage;
}

/**
 * One reward family. Channels: `rollout` (the team), `agent` (one agent: set `agent`),
 * `turn` (one decision: set `agent` and `targetSeq` to the new_answer or vote span).
 * A family that does not apply (e.g. no reference) returns [] — no score, which is not a 0.
 * A family that cannot compute (a custom command that crashed) throws; computeRewards rethrows it
 * as a RewardError naming the family.
 */
export interface RewardFamily {
  name: string;
  describe: string;
  /**
   * What it needs: `answer` families score one answer on its own (so they also score online GRPO and
   * collect samples), `team` families need a whole orchestration, `feedback` is added by people.
   */
  scope: RewardScope;
  score(ctx: RewardContext): RewardInput[] | Promise<RewardInput[]>;
}

export type RewardScope = 'answer' | 'team' | 'feedback';

/** One answer scored against the task reference. */
export interface AnswerScore {
  value: number;
  reason: string;
}

/** Scores an answer against a reference; null when the family does not apply to this task. */
export type AnswerScorer = (answer: string, reference: string, task: Task, config: RewardsConfig) => AnswerScore | null;
