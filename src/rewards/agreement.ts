import type { RewardInput } from '../trace/records.js';
import { findAnswerLine, normalizeAnswer } from '../util/answer-text.js';
import type { RewardFamily } from './types.js';

/** The comparison form of an answer: its answer line, normalized; a number in its canonical form ("42.0" → "42"). */
export function agreementKey(content: string): string {
  const line = findAnswerLine(content);
  const text = normalizeAnswer(line.source === 'empty' ? content : line.text).replace(/(?<=\d),(?=\d{3}\b)/g, '');
  const n = Number(text);
  return text !== '' && Number.isFinite(n) ? String(n) : text;
}

/**
 * Agreement with the team's majority, a pseudo-label that needs no reference (test-time RL's): the most frequent
 * answer among every answer of the rollout (every agent, every round) is taken as right. When it holds at least
 * `rewards.agreement.min_share` of at least `min_answers` answers, each answer scores 1 if it agrees and 0 if not
 * (turn channel, targetSeq = the answer) and the final answer likewise (rollout channel); below that the rollout
 * gives no signal. A tie for the most frequent is no majority.
 */
export const agreementReward: RewardFamily = {
  name: 'agreement',
  scope: 'team',
  describe: "agreement with the majority of the rollout's answers (no reference; silent below the minimum share)",
  score({ outcome, config }) {
    const { min_share: minShare, min_answers: minAnswers } = config.agreement;
    const keys = outcome.answers.map((a) => agreementKey(a.content)).filter((k) => k !== '');
    if (keys.length < minAnswers) return [];
    const counts = new Map<string, number>();
    for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
    const ranked = [...counts].sort((a, b) => b[1] - a[1]);
    const [majority, n] = ranked[0]!;
    if (ranked[1]?.[1] === n || n / keys.length < minShare) return [];
    const share = `${n} of ${keys.length} answers say "${majority}"`;
    const out: RewardInput[] = outcome.answers.map((a) => {
      const agrees = agreementKey(a.content) === majority;
      const reason = `${agrees ? 'agrees' : 'disagrees'} with the majority (${share})`;
      return { channel: 'turn', family: 'agreement', value: agrees ? 1 : 0, reason, agent: a.agent, targetSeq: a.seq };
    });
    const final = outcome.finalAnswer === null ? null : agreementKey(outcome.finalAnswer) === majority;
    out.push({
      channel: 'rollout',
      family: 'agreement',
      value: final ? 1 : 0,
      reason:
        final === null ? `no final answer (${share})` : `the final answer ${final ? 'agrees' : 'disagrees'} (${share})`,
    });
    return out;
  },
};
