import type { RewardInput } from '../trace/records.js';
import { agentOf, latestAnswers } from './outcome.js';
import type { RewardFamily } from './types.js';

/**
 * The share of the final votes that went to each agent's answer: on the turn channel for the answer
 * standing in the final round (the agent's last answer; targetSeq = its new_answer span) and on the
 * agent channel. Agents without an answer get nothing; no votes → [].
 */
export const peerVoteReward: RewardFamily = {
  name: 'peer_vote',
  scope: 'team',
  describe: "share of the final votes each agent's final-round answer received",
  score({ outcome }) {
    const total = outcome.votes.length;
    if (!total) return [];
    const received = new Map<string, number>();
    for (const v of outcome.votes) {
      const target = agentOf(outcome, v.target);
      received.set(target, (received.get(target) ?? 0) + 1);
    }
    const out: RewardInput[] = [];
    for (const [agent, answer] of latestAnswers(outcome)) {
      const n = received.get(agent) ?? 0;
      const reason = `${n} of ${total} final vote(s) for ${answer.label}`;
      out.push({ channel: 'turn', family: 'peer_vote', value: n / total, reason, agent, targetSeq: answer.seq });
      out.push({ channel: 'agent', family: 'peer_vote', value: n / total, reason, agent });
    }
    return out;
  },
};
