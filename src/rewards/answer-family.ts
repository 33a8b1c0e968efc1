import type { RewardInput } from '../trace/records.js';
import { latestAnswers, referenceOf } from './outcome.js';
import type { AnswerScorer, RewardFamily } from './types.js';

/**
 * An answer-quality family: the scorer compares one answer with the task reference. Emits the final
 * answer on the `rollout` channel (0 when the rollout ended without one), every answer on the `turn`
 * channel (agent + targetSeq = the new_answer span) and each agent's last answer on the `agent`
 * channel. No reference, or a scorer that does not apply to the task (null), gives [].
 */
export function answerQualityFamily(name: string, describe: string, scorer: AnswerScorer): RewardFamily {
  return {
    name,
    describe,
    scope: 'answer',
    score({ outcome, config }) {
      const reference = referenceOf(outcome);
      const task = outcome.task;
      if (reference === null || !task) return [];
      const probe = scorer(outcome.finalAnswer ?? '', reference, task, config);
      if (probe === null) return [];
      const out: RewardInput[] = [];
      out.push(
        outcome.finalAnswer === null
          ? { channel: 'rollout', family: name, value: 0, reason: `no final answer (rollout ${outcome.status})` }
          : { channel: 'rollout', family: name, value: probe.value, reason: probe.reason },
      );
      const byAnswer = new Map<number, number>();
      for (const a of outcome.answers) {
        const s = scorer(a.content, reference, task, config);
        if (!s) continue;
        byAnswer.set(a.seq, s.value);
        out.push({
          channel: 'turn',
          family: name,
          value: s.value,
          reason: `${a.label} round ${a.round}: ${s.reason}`,
          agent: a.agent,
          targetSeq: a.seq,
        });
      }
      for (const [agent, a] of latestAnswers(outcome)) {
        const value = byAnswer.get(a.seq);
        if (value !== undefined)
          out.push({ channel: 'agent', family: name, value, reason: `last answer (${a.label}, seq ${a.seq})`, agent });
      }
      return out;
    },
  };
}
