import type { ChatMessage } from '../llm/types.js';
import { dict } from '../util/dict.js';
import type { RolloutOutcome } from './types.js';

export interface Criterion {
  criterion: string;
  weight: number;
}

export interface Verdict {
  /** Criterion → score 0..10, one per rubric criterion. */
  scores: Record<string, number>;
  reason: string;
}

export const JUDGE_FORMAT = (rubric: Criterion[]) =>
  `{"scores": {${rubric.map((c) => `${JSON.stringify(c.criterion)}: <0-10>`).join(', ')}}, "reason": "<one or two sentences>"}`;

/** The judge conversation: the task, the reference when there is one, the answer and the rubric. */
export function judgeMessages(outcome: RolloutOutcome, answer: string, rubric: Criterion[]): ChatMessage[] {
  const reference = outcome.task?.reference?.trim();
  const parts = [
    `Task:\n${outcome.task?.prompt ?? '(the task text is not available)'}`,
    reference
      ? `Reference answer (known to be correct):\n${reference}`
      : 'There is no reference answer; judge on the task alone.',
    `Answer to grade:\n${answer}`,
    `Rubric (score each criterion from 0 = worst to 10 = best):\n${rubric.map((c) => `- ${c.criterion} (weight ${c.weight})`).join('\n')}`,
    `Reply with only this JSON object and nothing else:\n${JUDGE_FORMAT(rubric)}`,
  ];
  return [
    { role: 'system', content: 'You are a strict, fair grader of answers. You reply with JSON only.' },
    { role: 'user', content: parts.join('\n\n') },
  ];
}

/**
 * Reads a judge reply: the first JSON object (inside code fences or among other text) that has a
 * "scores" object with a 0..10 number for every rubric criterion (keys matched case-insensitively).
 * Throws an Error saying what is wrong, which is fed back to the judge on retry.
 */
export function parseJudgeReply(text: string | null, rubric: Criterion[]): Verdict {
  if (!text?.trim()) throw new Error('the reply is empty');
  let problem: string | null = null;
  let sawJson = false;
  for (const candidate of jsonObjects(text)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(candidate);
    } catch {
      continue;
    }
    sawJson = true;
    const verdict = readVerdict(parsed, rubric);
    if (verdict !== null && typeof verdict !== 'string') return verdict;
    if (verdict !== null) problem ??= verdict;
  }
  throw new Error(problem ?? (sawJson ? 'the JSON object has no "scores" object' : 'no valid JSON object found'));
}

/** A verdict, or null when the object is not a verdict at all, or a string naming what is wrong with it. */
function readVerdict(parsed: unknown, rubric: Criterion[]): Verdict | string | null {
  const raw = (parsed as { scores?: unknown } | null)?.scores;
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const entries = Object.entries(raw as Record<string, unknown>).map(([k, v]) => [k.trim().toLowerCase(), v] as const);
  const scores = dict<number>();
  for (const { criterion } of rubric) {
    const value = entries.find(([k]) => k === criterion.trim().toLowerCase())?.[1];
    const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isFinite(n)) return `"scores" has no number for "${criterion}"`;
    if (n < 0 || n > 10) return `the score for "${criterion}" is ${n}, outside 0..10`;
    scores[criterion] = n;
  }
  const reason = (parsed as { reason?: unknown }).reason;
  return { scores, reason: typeof reason === 'string' ? reason.trim() : '' };
}

/** Balanced {…} substrings, fenced blocks first, each in order of appearance. */
function* jsonObjects(text: string): Generator<string> {
  for (const m of text.matchAll(/```[\w-]*\s*\n?([\s\S]*?)```/g)) yield* balanced(m[1] ?? '');
  yield* balanced(text);
}

function* balanced(text: string): Generator<string> {
  for (let start = text.indexOf('{'); start >= 0; start = text.indexOf('{', start + 1)) {
    let depth = 0;
    let inString = false;
    for (let i = start; i < text.length; i++) {
      const ch = text[i];
      if (inString) {
        if (ch === '\\') i++;
        else if (ch === '"') inString = false;
      } else if (ch === '"') inString = true;
      else if (ch === '{') depth++;
      else if (ch === '}' && --depth === 0) {
        yield text.slice(start, i + 1);
        break;
      }
    }
  }
}
