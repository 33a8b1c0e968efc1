import { answerQualityFamily } from './answer-family.js';
import { bestOfAnswerAndLine } from './f1.js';
import type { AnswerScorer } from './types.js';

/** Length of the longest common subsequence of two word lists (O(n·m) time, O(m) memory). */
export function lcsLength(a: string[], b: string[]): number {
  let prev = new Array<number>(b.length + 1).fill(0);
  for (const x of a) {
    const cur = new Array<number>(b.length + 1).fill(0);
    for (let j = 1; j <= b.length; j++) cur[j] = x === b[j - 1] ? prev[j - 1]! + 1 : Math.max(prev[j]!, cur[j - 1]!);
    prev = cur;
  }
  return prev[b.length]!;
}

/** ROUGE-L F-measure (β = 1): P = LCS/|candidate|, R = LCS/|reference|, F = 2PR/(P+R). */
export function rougeL(candidate: string[], reference: string[]): number {
  if (!candidate.length || !reference.length) return candidate.length === reference.length ? 1 : 0;
  const lcs = lcsLength(candidate, reference);
  if (!lcs) return 0;
  const p = lcs / candidate.length;
  const r = lcs / reference.length;
  return (2 * p * r) / (p + r);
}

export const rougeLMatch: AnswerScorer = (answer, reference) => {
  const best = bestOfAnswerAndLine(answer, reference, rougeL);
  return { value: best.value, reason: `ROUGE-L F ${best.value.toFixed(3)} (${best.on})` };
};

export const rougeLReward = answerQualityFamily(
  'rouge_l',
  'ROUGE-L (longest common subsequence F-measure) against the reference',
  rougeLMatch,
);
