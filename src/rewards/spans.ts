import type { RewardInput, SpanInput } from '../trace/records.js';

/** The reward span a reward is recorded as, beside its row in the rewards table. */
export function rewardSpan(r: RewardInput): SpanInput {
  return {
    type: 'reward',
    name: r.family,
    agent: r.agent ?? null,
    parentSeq: r.targetSeq ?? null,
    payload: { channel: r.channel, value: r.value, reason: r.reason ?? null, target_seq: r.targetSeq ?? null },
  };
}
