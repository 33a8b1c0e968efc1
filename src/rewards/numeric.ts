import { extractFinalNumber, parseReferenceNumber } from '../util/answer-numbers.js';
import { answerQualityFamily } from './answer-family.js';
import { clip } from './exact.js';
import type { AnswerScorer } from './types.js';

/** Relative slack so that large references are not held to float-exact equality. */
export const RELATIVE_TOLERANCE = 1e-6;

/**
 * 1 when the answer's final number x satisfies |x − ref| ≤ max(tolerance, 1e-6·|ref|), else 0.
 * The tolerance is task.metadata.tolerance when it is a non-negative number, else
 * rewards.numeric_tolerance. Not applicable (null) to string tasks and to non-numeric references.
 */
export const numericMatch: AnswerScorer = (answer, reference, task, config) => {
  if (task.metadata.answer_type === 'string') return null;
  const ref = parseReferenceNumber(reference);
  if (ref === null) return null;
  const meta = task.metadata.tolerance;
  const tolerance = typeof meta === 'number' && Number.isFinite(meta) && meta >= 0 ? meta : config.numeric_tolerance;
  const allowed = Math.max(tolerance, RELATIVE_TOLERANCE * Math.abs(ref));
  const found = extractFinalNumber(answer);
  if (!found) return { value: 0, reason: `no number in "${clip(answer)}" (reference ${ref})` };
  const diff = Math.abs(found.value - ref);
  return diff <= allowed
    ? { value: 1, reason: `${found.value} ≈ ${ref} (|Δ| ${fmt(diff)} ≤ ${fmt(allowed)})` }
    : { value: 0, reason: `${found.value} ≠ ${ref} (|Δ| ${fmt(diff)} > ${fmt(allowed)})` };
};

export const numericReward = answerQualityFamily(
  'numeric',
  'final number within tolerance of the numeric reference',
  numericMatch,
);

function fmt(n: number): string {
  return Number(n.toPrecision(6)).toString();
}
