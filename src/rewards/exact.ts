import { findAnswerLine, normalizeAnswer } from '../util/answer-text.js';
import { answerQualityFamily } from './answer-family.js';
import type { AnswerScorer } from './types.js';

/**
 * 1 when the normalized answer (trim, case, whitespace, trailing period) equals the normalized
 * reference, or when the answer's final answer line (extractFinalAnswer) does; else 0.
 */
export const exactMatch: AnswerScorer = (answer, reference) => {
  const ref = normalizeAnswer(reference);
  if (normalizeAnswer(answer) === ref) return { value: 1, reason: 'matches the reference' };
  const line = findAnswerLine(answer);
  if (line.source !== 'empty' && normalizeAnswer(line.text) === ref)
    return { value: 1, reason: `answer line (${line.source}) matches the reference` };
  return { value: 0, reason: `"${clip(line.text)}" ≠ reference "${clip(reference)}"` };
};

export const exactReward = answerQualityFamily(
  'exact',
  'exact match with the task reference (normalized; a final answer line counts)',
  exactMatch,
);

export function clip(text: string, max = 60): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
