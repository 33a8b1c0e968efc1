import { normalizeAnswer } from '../util/answer-text.js';
import { answerQualityFamily } from './answer-family.js';
import { clip } from './exact.js';
import type { AnswerScorer } from './types.js';

/**
 * 1 when the normalized reference occurs in the normalized answer, at word boundaries where the
 * reference starts or ends with a letter or digit (reference "4" is not found in "42" or "4.5"); else 0.
 */
export const containsMatch: AnswerScorer = (answer, reference) => {
  const ref = normalizeAnswer(reference);
  if (!ref) return null;
  const text = normalizeAnswer(answer);
  const wordy = /[\p{L}\p{N}]/u;
  for (let at = text.indexOf(ref); at >= 0; at = text.indexOf(ref, at + 1)) {
    const before = text.slice(Math.max(0, at - 2), at);
    const after = text.slice(at + ref.length, at + ref.length + 2);
    const startOk = !wordy.test(ref[0]!) || !(wordy.test(before.at(-1) ?? ' ') || /\d[.,]$/.test(before));
    const endOk = !wordy.test(ref.at(-1)!) || !(wordy.test(after[0] ?? ' ') || /^[.,]\d/.test(after));
    if (startOk && endOk) return { value: 1, reason: `contains "${clip(ref)}"` };
  }
  return { value: 0, reason: `"${clip(ref)}" not found in the answer` };
};

export const containsReward = answerQualityFamily(
  'contains',
  'the answer contains the reference (normalized, at word boundaries)',
  containsMatch,
);
