import { capturedTurns, conversationText } from '../../datasets/captured.js';
import { promptKey } from '../../datasets/messages.js';
import { computeRewards } from '../../rewards/compute.js';
import { storeRewards } from '../../rewards/feedback.js';
import type { RewardContext, RewardsConfig } from '../../rewards/types.js';
import { outcomeFromSpans } from '../../rollouts/outcome.js';
import type { Store } from '../../store/index.js';
import { GATEWAY_SOURCE } from '../../store/rollouts.js';
import type { PromptPayload } from '../../trace/payloads.js';
import type { Rollout } from '../../trace/records.js';
import type { CapturedPeers } from './captured-peers.js';

/**
 * The reward families that score a captured session without a reward, the ones that need no task reference: the
 * judge (when it is on), agreement (with the other completions of the same prompt, capturedPeers) and a custom
 * command (rewards.custom), each with a weight. Empty: it waits.
 */
export function capturedFamilies(rewards: RewardsConfig, judge: RewardContext['judge']): Record<string, number> {
  const w = rewards.weights;
  return {
    ...(judge && w.judge ? { judge: w.judge } : {}),
    ...(w.agreement ? { agreement: w.agreement } : {}),
    ...(rewards.custom && w.custom ? { custom: w.custom } : {}),
  };
}

/** A captured session's chat calls with the group key of each one's prompt (promptKey). */
export function keyedTurns(store: Store, rolloutId: string) {
  const spans = store.spans.list(rolloutId);
  const bySeq = new Map(spans.map((s) => [s.seq, s.payload as PromptPayload]));
  const turns = capturedTurns(spans, (seq) => bySeq.get(seq) ?? null).map((t) => ({
    ...t,
    key: promptKey(bySeq.get(t.seq)!.request),
  }));
  return { spans, turns };
}

/**
 * Scores a captured session with `families` (capturedFamilies): the conversation of its last chat call stands for
 * the task, that call's completion for the answer, and the session's calls with that same prompt (its own samples)
 * together with `peers`' for other sessions are what agreement counts. The rewards are stored on the session (reward
 * spans and rows) and its total updated; null, and nothing stored, when no family gave a signal (no majority).
 */
export async function scoreCaptured(
  store: Store,
  r: Rollout,
  rewards: RewardsConfig,
  families: Record<string, number>,
  judge: RewardContext['judge'],
  peers: CapturedPeers,
  signal?: AbortSignal,
): Promise<number | null> {
  const { spans, turns } = keyedTurns(store, r.id);
  const last = turns.at(-1);
  const task = last && {
    id: `captured:${r.id}`,
    prompt: conversationText(last.messages),
    metadata: {},
    source: GATEWAY_SOURCE,
  };
  const outcome = {
    ...outcomeFromSpans({ ...r, finalAnswer: last?.completion ?? null }, spans, task ?? null),
    ...(last && {
      samples: turns
        .filter((t) => t.key === last.key)
        .map((t) => ({ agent: t.agent ?? 'client', content: t.completion, seq: t.seq })),
      peers: peers.of(r.id, last.key),
    }),
  };
  const scored = await computeRewards({ outcome, config: rewards, judge, ...(signal ? { signal } : {}) }, families);
  if (!Object.keys(scored.byFamily).length) return null;
  return store.write(() => store.transaction(() => storeRewards(store, r.id, scored.rewards, rewards.weights).total));
}
