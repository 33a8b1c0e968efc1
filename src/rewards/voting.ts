import type { RewardInput } from '../trace/records.js';
import { agentOf, latestAnswers, mean } from './outcome.js';
import { answerQuality } from './quality.js';
import type { RewardFamily, RolloutOutcome, RewardsConfig } from './types.js';

/**
 * The agents whose current answer (their last one before `beforeSeq`) scores highest against the
 * reference (answerQuality). Empty without a reference or when every answer scores 0.
 */
export function referenceBest(outcome: RolloutOutcome, config: RewardsConfig, beforeSeq = Infinity): Set<string> {
  const scored = [...latestAnswers(outcome, beforeSeq)].map(
    ([agent, a]) => [agent, answerQuality(a.content, outcome.task, config)?.value ?? 0] as const,
  );
  const best = Math.max(0, ...scored.map(([, v]) => v));
  return new Set(best > 0 ? scored.filter(([, v]) => v === best).map(([agent]) => agent) : []);
}

/**
 * One reward per final-round vote (turn channel, agent = voter, targetSeq = the vote span): `correct`
 * for a vote for the eventual winner or for a reference-best answer, `incorrect` otherwise; plus each
 * voter's mean on the agent channel. No votes → [].
 */
export const votingReward: RewardFamily = {
  name: 'voting',
  scope: 'team',
  describe:
    'per vote: rewards.voting.correct for voting for the winner or the best answer by the reference, else incorrect',
  score({ outcome, config }) {
    const out: RewardInput[] = [];
    const perVoter = new Map<string, number[]>();
    const winner = outcome.winner === null ? null : agentOf(outcome, outcome.winner);
    for (const v of outcome.votes) {
      const target = agentOf(outcome, v.target);
      const best = referenceBest(outcome, config, v.seq);
      const why =
        target === winner
          ? 'voted for the winner'
          : best.has(target)
            ? 'voted for the best answer by the reference'
            : null;
      const value = why ? config.voting.correct : config.voting.incorrect;
      out.push({
        channel: 'turn',
        family: 'voting',
        value,
        reason: `${v.voter} → ${target}: ${why ?? 'neither the winner nor the best answer'}`,
        agent: v.voter,
        targetSeq: v.seq,
      });
      perVoter.set(v.voter, [...(perVoter.get(v.voter) ?? []), value]);
    }
    for (const [agent, values] of perVoter) {
      out.push({
        channel: 'agent',
        family: 'voting',
        value: mean(values),
        reason: `mean of ${values.length} vote(s)`,
        agent,
      });
    }
    return out;
  },
};
