import type { Algo, TrainConfig } from '../config/schema.js';
import { REFERENCE_VERIFYING, verifyingFamilies, type RewardsConfig } from '../config/sections/rewards.js';
import { UserError } from '../errors.js';

/**
 * Dataset builder options, named like the config keys they will come from (train.sft.*, train.grpo.*,
 * train.dpo.*, train.ppo.*; weights from rewards.weights). Until those keys exist in the config schema
 * the caller passes them here; every field has a default.
 */

/** Agent ids, or a regular expression source matched (unanchored, like Agent Lightning's agent_match) against the id. */
export type AgentMatch = string[] | string;

export interface SftOptions {
  /** Keep an example when its reward (turn reward of the answer, else the rollout total) is ≥ this; null keeps all. */
  reward_threshold: number | null;
  agents: AgentMatch | null;
  /** Also emit the winner's presentation (reward: the rollout total). */
  include_presentation: boolean;
  /** reward: turns at or above reward_threshold; verified: only completions an exact/numeric reward verified right (rejection sampling). */
  select: 'reward' | 'verified';
  /** select verified: rows per task at most. */
  max_per_task: number;
}

export interface GrpoOptions {
  agents: AgentMatch | null;
  /** Completions a group needs (at least 2). */
  min_group_size: number;
}

export interface DpoOptions {
  /** A pair needs reward(chosen) − reward(rejected) ≥ this (cross-rollout pairs also need it > 0). */
  min_margin: number;
  /** The prompt's system message; null: the chosen agent's system prompt resource, else DEFAULT_SYSTEM_PROMPT. */
  system_prompt: string | null;
  /** Cross-rollout pairs per task, widest margins first. */
  max_pairs_per_task: number;
  /** winner: the votes' order (winner against the others, better final answers against worse); correctness: verified-correct against verified-wrong answers of a task. */
  pairs: 'winner' | 'correctness';
  /** No suite (a category's first segment) above this share of the pairs (1: no limit); see suite-share.ts. */
  max_suite_share: number;
}

export interface PpoOptions {
  credit: 'final' | 'discounted';
  gamma: number;
  agents: AgentMatch | null;
}

export interface DatasetOptions {
  sft: SftOptions;
  grpo: GrpoOptions;
  dpo: DpoOptions;
  ppo: PpoOptions;
  /** Reward family weights (rewards.weights): a turn reward is Σ weight × value; null weighs every family 1. */
  weights: Partial<Record<string, number>> | null;
  /** The families whose verdict says an answer is right (config verifyingFamilies: rewards.references). */
  verifying: readonly string[];
}

export interface DatasetOptionsInput {
  sft?: Partial<SftOptions>;
  grpo?: Partial<GrpoOptions>;
  dpo?: Partial<DpoOptions>;
  ppo?: Partial<PpoOptions>;
  weights?: Partial<Record<string, number>> | null;
  verifying?: readonly string[];
}

export const DEFAULT_SYSTEM_PROMPT = 'You are a helpful assistant.';

export const DEFAULT_DATASET_OPTIONS: DatasetOptions = {
  sft: { reward_threshold: 0.5, agents: null, include_presentation: true, select: 'reward', max_per_task: 4 },
  grpo: { agents: null, min_group_size: 2 },
  dpo: { min_margin: 0, system_prompt: null, max_pairs_per_task: 16, pairs: 'winner', max_suite_share: 1 },
  ppo: { credit: 'final', gamma: 0.9, agents: null },
  weights: null,
  verifying: REFERENCE_VERIFYING,
};

/** Defaults filled in and values checked (bad values are UserErrors naming the option). */
export function resolveDatasetOptions(input: DatasetOptionsInput = {}): DatasetOptions {
  const d = DEFAULT_DATASET_OPTIONS;
  const o: DatasetOptions = {
    sft: { ...d.sft, ...defined(input.sft) },
    grpo: { ...d.grpo, ...defined(input.grpo) },
    dpo: { ...d.dpo, ...defined(input.dpo) },
    ppo: { ...d.ppo, ...defined(input.ppo) },
    weights: input.weights ?? null,
    verifying: input.verifying ?? d.verifying,
  };
  if (!Number.isInteger(o.grpo.min_group_size) || o.grpo.min_group_size < 2)
    bad('grpo.min_group_size', 'must be an integer ≥ 2');
  if (!(o.dpo.min_margin >= 0)) bad('dpo.min_margin', 'must be ≥ 0');
  if (!Number.isInteger(o.dpo.max_pairs_per_task) || o.dpo.max_pairs_per_task < 1)
    bad('dpo.max_pairs_per_task', 'must be a positive integer');
  if (o.dpo.pairs !== 'winner' && o.dpo.pairs !== 'correctness') bad('dpo.pairs', 'must be winner or correctness');
  if (!(o.dpo.max_suite_share > 0 && o.dpo.max_suite_share <= 1)) bad('dpo.max_suite_share', 'must be in (0, 1]');
  if (o.ppo.credit !== 'final' && o.ppo.credit !== 'discounted') bad('ppo.credit', 'must be final or discounted');
  if (!(o.ppo.gamma > 0 && o.ppo.gamma <= 1)) bad('ppo.gamma', 'must be in (0, 1]');
  if (o.sft.select !== 'reward' && o.sft.select !== 'verified') bad('sft.select', 'must be reward or verified');
  if (!Number.isInteger(o.sft.max_per_task) || o.sft.max_per_task < 1)
    bad('sft.max_per_task', 'must be a positive integer');
  if (o.sft.reward_threshold !== null && !Number.isFinite(o.sft.reward_threshold))
    bad('sft.reward_threshold', 'must be a number or null');
  for (const algo of ['sft', 'grpo', 'ppo'] as const) agentMatcher(o[algo].agents, `${algo}.agents`);
  return o;
}

/** A predicate for an agent filter: a list of ids, or a regular expression source; null accepts everyone. */
export function agentMatcher(match: AgentMatch | null, option = 'agents'): (agent: string | null) => boolean {
  if (match === null || match === undefined) return () => true;
  if (Array.isArray(match)) {
    const ids = new Set(match);
    return (agent) => agent !== null && ids.has(agent);
  }
  let re: RegExp;
  try {
    re = new RegExp(match);
  } catch (err) {
    bad(option, `is not a valid regular expression: ${(err as Error).message}`);
  }
  return (agent) => agent !== null && re.test(agent);
}

/** Without its undefined keys, so an absent config key (zod `.optional()`) keeps the default. */
function defined<T extends object>(o: T | undefined): Partial<T> {
  return Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function bad(option: string, message: string): never {
  throw new UserError(`train.${option}: ${message}`);
}

/** The keys a builder reads of a train.<algo> section, or of a role's recipe (which has no agents: the role chooses). */
type Section<A extends Algo, K extends keyof TrainConfig[A]> = Pick<TrainConfig[A], K> & { agents?: AgentMatch };

/** One section's builder options, by algorithm. */
export const SECTION_OPTIONS = {
  sft: (
    s: Section<'sft', 'reward_threshold' | 'include_presentation' | 'select' | 'max_per_task'>,
  ): Partial<SftOptions> => ({
    reward_threshold: s.reward_threshold,
    agents: s.agents ?? null,
    include_presentation: s.include_presentation,
    select: s.select,
    max_per_task: s.max_per_task,
  }),
  grpo: (s: Section<'grpo', 'min_group_size'>): Partial<GrpoOptions> => ({
    agents: s.agents ?? null,
    min_group_size: s.min_group_size,
  }),
  dpo: (
    s: Section<'dpo', 'min_margin' | 'system_prompt' | 'max_pairs_per_task' | 'pairs' | 'max_suite_share'>,
  ): Partial<DpoOptions> => ({
    min_margin: s.min_margin,
    system_prompt: s.system_prompt ?? null,
    max_pairs_per_task: s.max_pairs_per_task,
    pairs: s.pairs,
    max_suite_share: s.max_suite_share,
  }),
  ppo: (s: Section<'ppo', 'credit' | 'gamma'>): Partial<PpoOptions> => ({
    credit: s.credit,
    gamma: s.gamma,
    agents: s.agents ?? null,
  }),
};

/** The builder options from train.* and rewards (its weights, and which families verify). */
export function datasetOptionsFromConfig(
  train: TrainConfig,
  rewards: Pick<RewardsConfig, 'weights' | 'references'>,
): DatasetOptionsInput {
  return {
    sft: SECTION_OPTIONS.sft(train.sft),
    grpo: SECTION_OPTIONS.grpo(train.grpo),
    dpo: SECTION_OPTIONS.dpo(train.dpo),
    ppo: SECTION_OPTIONS.ppo(train.ppo),
    weights: rewards.weights,
    verifying: verifyingFamilies(rewards),
  };
}
