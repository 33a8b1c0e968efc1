import type { SpanWriter, Store } from '../store/index.js';
import type { Reward, RewardInput, Rollout } from '../trace/records.js';
import { rewardSpan } from './spans.js';
import { totalFromRewards } from './total.js';

/** Human feedback on a rollout, or on one of its agents: `massgen-rl feedback` and the gateway's /v1/feedback. */
export interface Feedback {
  score: number;
  agent?: string;
  note?: string;
}

export const MAX_NOTE_CHARS = 4000;

/** A feedback refused, naming the field at fault (the CLI shows it as its flag, the gateway as the `param`). */
export class FeedbackError extends Error {
  constructor(
    readonly field: 'score' | 'agent' | 'note',
    message: string,
  ) {
    super(message);
    this.name = 'FeedbackError';
  }
}

/**
 * The agents feedback may credit: those the rollout's metadata lists (collect, imports), else those its
 * spans name (a gateway session's agents come from each call's X-Agent-Id).
 */
export function feedbackAgents(store: Store, rollout: Pick<Rollout, 'id' | 'metadata'>): string[] {
  const listed = rollout.metadata.agents;
  return Array.isArray(listed) ? (listed as string[]) : store.spans.agents(rollout.id);
}

/** The reward row a feedback adds, checked: a finite score, a known agent, a note of bounded length. */
export function feedbackReward(
  fb: Feedback,
  rolloutId: string,
  agents: readonly string[],
  defaultReason: string,
): RewardInput {
  if (typeof fb.score !== 'number' || !Number.isFinite(fb.score)) {
    throw new FeedbackError('score', `score must be a finite number, got ${String(fb.score)}`);
  }
  if (fb.note !== undefined && fb.note.length > MAX_NOTE_CHARS) {
    throw new FeedbackError('note', `note must be at most ${MAX_NOTE_CHARS} characters, got ${fb.note.length}`);
  }
  if (fb.agent !== undefined && !agents.includes(fb.agent)) {
    throw new FeedbackError(
      'agent',
      `rollout ${rolloutId} has no agent "${fb.agent}"; agents: ${agents.join(', ') || 'none recorded'}`,
    );
  }
  return {
    channel: fb.agent ? 'agent' : 'rollout',
    family: 'human',
    value: fb.score,
    reason: fb.note ?? defaultReason,
    agent: fb.agent ?? null,
  };
}

/**
 * Stores rewards that reach a rollout after its scoring (human feedback, a captured session's late scorers:
 * a reward span and a row each) and sets the rollout's total from all its rewards; call inside a write
 * transaction. `writer`: the rollout's open span writer, when it has one.
 */
export function storeRewards(
  store: Store,
  rolloutId: string,
  rewards: readonly RewardInput[],
  weights: Partial<Record<string, number>>,
  writer: SpanWriter = store.spans.writer(rolloutId),
): { reward: Reward; total: number } {
  for (const r of rewards) writer.add(rewardSpan(r));
  writer.flush();
  store.rewards.add(rolloutId, rewards);
  const all = store.rewards.list(rolloutId);
  const total = totalFromRewards(all, weights);
  store.rollouts.setTotalReward(rolloutId, total);
  return { reward: all[all.length - 1]!, total };
}
