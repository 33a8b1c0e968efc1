import type { Task } from '../tasks/types.js';
import { exactMatch } from './exact.js';
import { f1Match } from './f1.js';
import { numericMatch } from './numeric.js';
import type { RewardsConfig } from './types.js';

export interface Quality {
  value: number;
  /** The family that decided: exact, numeric or f1. */
  family: 'exact' | 'numeric' | 'f1';
}

/**
 * The best available answer-quality score of one answer: 1 when it is an exact match, else the numeric
 * score when the reference is a number, else token F1. Null when the task has no reference.
 */
export function answerQuality(answer: string | null, task: Task | null, config: RewardsConfig): Quality | null {
  const reference = task?.reference;
  if (!task || typeof reference !== 'string' || !reference.trim()) return null;
  if (answer === null) return { value: 0, family: 'exact' };
  const exact = exactMatch(answer, reference, task, config);
  if (exact && exact.value >= 1) return { value: 1, family: 'exact' };
  const numeric = numericMatch(answer, reference, task, config);
  if (numeric) return { value: numeric.value, family: 'numeric' };
  const f1 = f1Match(answer, reference, task, config);
  return f1 ? { value: f1.value, family: 'f1' } : { value: 0, family: 'exact' };
}
