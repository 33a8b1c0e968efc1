import { parseTextAction } from '../orchestrator/text-protocol.js';
import type { RewardInput } from '../trace/records.js';
import { findNumbers } from '../util/answer-numbers.js';
import { findAnswerLine, normalizeAnswer } from '../util/answer-text.js';
import type { RewardFamily, RolloutOutcome } from './types.js';

/**
 * The comparison form of an answer: its answer line, normalized; a lone number by its value ("42.0" → "42"). With
 * `last_number` a line holding numbers compares by its last one ("So 2 * 5 = 10." → "10").
 */
export function agreementKey(content: string, compare: 'answer_line' | 'last_number' = 'answer_line'): string {
  const line = findAnswerLine(content);
  const text = normalizeAnswer(line.source === 'empty' ? content : line.text);
  const numbers = findNumbers(text);
  if (compare === 'last_number' && numbers.length) return String(numbers.at(-1)!.value);
  return numbers.length === 1 && numbers[0]!.raw === text ? String(numbers[0]!.value) : text;
}

/**
 * Agreement with the majority, a pseudo-label that needs no reference (test-time RL's): the most frequent answer
 * among every answer of the rollout (every agent, every round) and every extra sample that answers rather than votes
 * (collect.samples_per_turn) is taken as right. When it holds at least `rewards.agreement.min_share` of at least
 * `min_answers` of them, each answer and sample scores 1 if it agrees and 0 if not (turn channel, targetSeq = its
 * span) and the final answer likewise (rollout channel); below that the rollout gives no signal. A tie for the most
 * frequent is no majority. An independent answer that repeats another's final answer is recorded as a vote for it
 * (`repeats`): it counts as that answer, scored on its vote span. The coordination protocol refuses an answer that
 * repeats one already given, so there, without samples, a majority forms only where differently worded answers end
 * on the same answer line.
 */
export const agreementReward: RewardFamily = {
  name: 'agreement',
  scope: 'team',
  describe: "agreement with the majority of the rollout's answers (no reference; silent below the minimum share)",
  score({ outcome, config }) {
    const key = (content: string) => agreementKey(content, config.agreement.compare);
    const pool = [...outcome.answers, ...repeated(outcome), ...(outcome.samples ?? []).flatMap(answerSample)].map(
      (a) => ({ ...a, key: key(a.content) }),
    );
    const keys = [...pool.map((a) => a.key), ...(outcome.peers ?? []).map(key)].filter((k) => k !== '');
    const found = majorityOf(keys, config.agreement);
    if (!found) return [];
    const { majority } = found;
    const share = `${found.count} of ${keys.length} answers and samples say "${majority}"`;
    const out: RewardInput[] = pool.map((a) => {
      const agrees = a.key === majority;
      const reason = `${agrees ? 'agrees' : 'disagrees'} with the majority (${share})`;
      return { channel: 'turn', family: 'agreement', value: agrees ? 1 : 0, reason, agent: a.agent, targetSeq: a.seq };
    });
    const final = outcome.finalAnswer === null ? null : key(outcome.finalAnswer) === majority;
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

/**
 * The most frequent key when it holds at least `min_share` of at least `min_answers` keys and no other key is as
 * frequent; null otherwise (no signal).
 */
export function majorityOf(
  keys: readonly string[],
  limits: { min_share: number; min_answers: number },
): { majority: string; count: number } | null {
  if (keys.length < limits.min_answers) return null;
  const counts = new Map<string, number>();
  for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
  const ranked = [...counts].sort((a, b) => b[1] - a[1]);
  const [majority, count] = ranked[0]!;
  if (ranked[1]?.[1] === count || count / keys.length < limits.min_share) return null;
  return { majority, count };
}

/** Each repeating vote as the answer it repeated (the target's latest answer before it), on the vote's span. */
function repeated(outcome: RolloutOutcome): { agent: string; content: string; seq: number }[] {
  return outcome.votes.flatMap((v) => {
    const target = v.repeats ? outcome.answers.findLast((a) => a.agent === v.target && a.seq < v.seq) : undefined;
    return target ? [{ agent: v.voter, content: target.content, seq: v.seq }] : [];
  });
}

/** A sample as an answer: its ANSWER: text; a vote (VOTE: line) is none; a reply without an action line as it is. */
function answerSample<T extends { content: string }>(sample: T): T[] {
  const parsed = parseTextAction(sample.content);
  if (!parsed.ok) return [sample];
  return parsed.action.kind === 'answer' ? [{ ...sample, content: parsed.action.content }] : [];
}
