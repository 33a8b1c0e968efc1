import { capturedTurns, conversationText } from '../../datasets/captured.js';
import { computeRewards } from '../../rewards/compute.js';
import { storeRewards } from '../../rewards/feedback.js';
import type { RewardContext, RewardsConfig } from '../../rewards/types.js';
import { outcomeFromSpans } from '../../rollouts/outcome.js';
import type { Store } from '../../store/index.js';
import { GATEWAY_SOURCE } from '../../store/rollouts.js';
import type { PromptPayload } from '../../trace/payloads.js';
import type { Rollout } from '../../trace/records.js';

/**
 * The reward families that score a captured session without a reward: the judge (when it is on) and a
 * custom command (rewards.custom with a weight), the ones that need no task reference. Empty: it waits.
 */
export function capturedFamilies(rewards: RewardsConfig, judge: RewardContext['judge']): Record<string, number> {
  const w = rewards.weights;
  return {
    ...(judge && w.judge ? { judge: w.judge } : {}),
    ...(rewards.custom && w.custom ? { custom: w.custom } : {}),
  };
}

/**
 * Scores a captured session with `families` (capturedFamilies): the conversation of its last chat call
 * stands for the task, that call's completion for the answer. The rewards are stored on the session (reward
 * spans and rows) and its total updated.
 */
export async function scoreCaptured(
  store: Store,
  r: Rollout,
  rewards: RewardsConfig,
  families: Record<string, number>,
  judge: RewardContext['judge'],
  signal?: AbortSignal,
): Promise<number> {
  const spans = store.spans.list(r.id);
  const bySeq = new Map(spans.map((s) => [s.seq, s.payload as PromptPayload]));
  const last = capturedTurns(spans, (seq) => bySeq.get(seq) ?? null).at(-1);
  const task = last && {
    id: `captured:${r.id}`,
    prompt: conversationText(last.messages),
    metadata: {},
    source: GATEWAY_SOURCE,
  };
  const outcome = outcomeFromSpans({ ...r, finalAnswer: last?.completion ?? null }, spans, task ?? null);
  const scored = await computeRewards({ outcome, config: rewards, judge, ...(signal ? { signal } : {}) }, families);
  return store.write(() => store.transaction(() => storeRewards(store, r.id, scored.rewards, rewards.weights).total));
}
