import { answerWords, extractFinalAnswer } from '../util/answer-text.js';
import { answerQualityFamily } from './answer-family.js';
import type { AnswerScorer } from './types.js';

/** Token-level F1 (SQuAD style: word multiset overlap) between two word lists; 1 when both are empty. */
export function tokenF1(candidate: string[], reference: string[]): number {
  if (!candidate.length || !reference.length) return candidate.length === reference.length ? 1 : 0;
  const counts = new Map<string, number>();
  for (const w of reference) counts.set(w, (counts.get(w) ?? 0) + 1);
  let overlap = 0;
  for (const w of candidate) {
    const left = counts.get(w) ?? 0;
    if (left > 0) {
      overlap++;
      counts.set(w, left - 1);
    }
  }
  if (!overlap) return 0;
  const p = overlap / candidate.length;
  const r = overlap / reference.length;
  return (2 * p * r) / (p + r);
}

/**
 * Scores the whole answer and its final answer line against the reference and keeps the better, so a
 * correct answer is not penalised for its explanation.
 */
export function bestOfAnswerAndLine(answer: string, reference: string, metric: (c: string[], r: string[]) => number) {
  const ref = answerWords(reference);
  const whole = metric(answerWords(answer), ref);
  const line = metric(answerWords(extractFinalAnswer(answer)), ref);
  return line > whole ? { value: line, on: 'answer line' } : { value: whole, on: 'whole answer' };
}

export const f1Match: AnswerScorer = (answer, reference) => {
  const best = bestOfAnswerAndLine(answer, reference, tokenF1);
  return { value: best.value, reason: `token F1 ${best.value.toFixed(3)} (${best.on})` };
};

export const f1Reward = answerQualityFamily(
  'f1',
  'token F1 between the answer and the reference (normalized words)',
  f1Match,
);
