import type { Task } from '../tasks/types.js';
import { extractFinalAnswer } from '../util/answer-text.js';
import { answerQualityFamily } from './answer-family.js';
import { clip } from './exact.js';
import type { AnswerScorer } from './types.js';

const SLASHED = /^\/(.+)\/([dgimsuvy]*)$/s;

/**
 * The task's answer pattern: task.metadata.answer_regex when it is a string (a bare pattern or
 * /…/flags); the reference itself when answer_regex is true or the reference is written /…/flags.
 * Null when the task has no pattern. An invalid pattern throws, naming the task.
 */
export function answerPattern(reference: string, task: Task): RegExp | null {
  const meta = task.metadata.answer_regex;
  const source =
    typeof meta === 'string' && meta !== ''
      ? meta
      : meta === true || SLASHED.test(reference.trim())
        ? reference.trim()
        : null;
  if (source === null) return null;
  const slashed = SLASHED.exec(source);
  try {
    return slashed ? new RegExp(slashed[1]!, (slashed[2] ?? '').replace('g', '')) : new RegExp(source);
  } catch (err) {
    throw new Error(`task ${task.id}: invalid answer regex ${JSON.stringify(source)}: ${(err as Error).message}`);
  }
}

/** 1 when the pattern matches the answer or its final answer line, else 0; null without a pattern. */
export const regexMatch: AnswerScorer = (answer, reference, task) => {
  const pattern = answerPattern(reference, task);
  if (!pattern) return null;
  if (pattern.test(answer)) return { value: 1, reason: `matches ${pattern}` };
  const line = extractFinalAnswer(answer);
  if (pattern.test(line)) return { value: 1, reason: `answer line matches ${pattern}` };
  return { value: 0, reason: `"${clip(line)}" does not match ${pattern}` };
};

export const regexReward = answerQualityFamily(
  'regex',
  'the answer matches the reference pattern (metadata.answer_regex or a /…/ reference)',
  regexMatch,
);
