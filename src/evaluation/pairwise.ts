import type { ChatMessage, LlmClient } from '../llm/types.js';
import { askJudge } from '../rewards/judge-ask.js';

/** One judge verdict on two answers shown as A and B; null when the judge gave no usable reply. */
export type Preference = 'A' | 'B' | 'tie' | null;

/** The candidate's side of one position-swapped comparison. */
export interface SwappedVerdict {
  /** Candidate shown first (A), baseline second. */
  candidateFirst: Preference;
  /** Baseline shown first (A), candidate second. */
  baselineFirst: Preference;
  /** 1: the candidate is preferred in both orders, 0: the baseline is, 0.5: a tie or the orders disagree. */
  score: number;
  /** Both orders name the same winner (or both a tie). */
  agreed: boolean;
}

const FORMAT = '{"winner": "A" | "B" | "tie", "reason": "<one sentence>"}';

/**
 * Both orders of one comparison as the candidate sees them: a preference counts only when both agree,
 * so a judge that always favours one position scores a tie and never agrees.
 */
export function swapped(candidateFirst: Preference, baselineFirst: Preference): SwappedVerdict {
  const first = candidateFirst === 'A' ? 1 : candidateFirst === 'B' ? 0 : candidateFirst === 'tie' ? 0.5 : null;
  const second = baselineFirst === 'B' ? 1 : baselineFirst === 'A' ? 0 : baselineFirst === 'tie' ? 0.5 : null;
  const agreed = first !== null && first === second;
  return { candidateFirst, baselineFirst, score: agreed ? first : 0.5, agreed };
}

/** The judge conversation: the captured conversation, then the two answers to compare. */
export function pairwiseMessages(conversation: unknown[], a: string, b: string): ChatMessage[] {
  const shown = conversation.map((m) => {
    const { role, content } = (m ?? {}) as { role?: unknown; content?: unknown };
    const text = typeof content === 'string' ? content : JSON.stringify(content ?? null);
    return `[${typeof role === 'string' ? role : 'message'}]\n${clipText(text, 4000)}`;
  });
  const parts = [
    `Conversation so far:\n${clipText(shown.join('\n\n'), 12_000)}`,
    `Answer A (the next assistant turn):\n${clipText(a, 6000)}`,
    `Answer B (the next assistant turn):\n${clipText(b, 6000)}`,
    'Which answer is the better next turn: more correct, more helpful, better at following the instructions? '
      + 'Judge the content, not the length or the order in which the answers are shown.',
    `Reply with only this JSON object and nothing else:\n${FORMAT}`,
  ];
  return [
    { role: 'system', content: 'You are a strict, fair judge comparing two answers. You reply with JSON only.' },
    { role: 'user', content: parts.join('\n\n') },
  ];
}

/**
 * The winner a judge reply names: a JSON "winner" field, else "winner/answer (is) A", else a lone A/B/tie;
 * throws saying what is wrong.
 */
export function parsePreference(text: string | null): Exclude<Preference, null> {
  if (!text?.trim()) throw new Error('the reply is empty');
  const field =
    /"winner"\s*:\s*"([^"]*)"/i.exec(text)?.[1]
    // case-sensitive A and B: "the answer is a …" names no winner
    ?? /\b(?:[Ww]inner|[Bb]etter answer|[Aa]nswer)\s*(?:is\s*)?[:\s"'`*]*(A|B|[Tt]ie)\b/.exec(text)?.[1]
    ?? text;
  const word = field
    .trim()
    .replace(/^answer\s+/i, '')
    .replace(/[."'`*]/g, '')
    .trim()
    .toLowerCase();
  if (word === 'a') return 'A';
  if (word === 'b') return 'B';
  if (word === 'tie' || word === 'equal' || word === 'both') return 'tie';
  throw new Error(`no winner of "A", "B" or "tie" in the reply`);
}

export interface JudgeCall {
  client: LlmClient;
  model: string;
  /** Attempts in all (a malformed reply is answered with what was wrong and asked again). */
  attempts: number;
  signal?: AbortSignal;
}

/** One order's verdict, with the judge's tokens; null preference after every attempt failed. */
export async function askPreference(
  judge: JudgeCall,
  messages: ChatMessage[],
): Promise<{ preference: Preference; tokens: number; failure?: string }> {
  const r = await askJudge(
    { ...judge, maxTokens: 256, parse: parsePreference, format: `this JSON object:\n${FORMAT}` },
    messages,
  );
  return 'value' in r
    ? { preference: r.value, tokens: r.tokens }
    : { preference: null, tokens: r.tokens, failure: r.failure };
}

/** Both orders of one comparison, asked one after the other. */
export async function judgeSwapped(
  judge: JudgeCall,
  conversation: unknown[],
  candidate: string,
  baseline: string,
): Promise<SwappedVerdict & { tokens: number; failures: string[] }> {
  const first = await askPreference(judge, pairwiseMessages(conversation, candidate, baseline));
  const second = await askPreference(judge, pairwiseMessages(conversation, baseline, candidate));
  const failures = [first.failure, second.failure].filter((f): f is string => f !== undefined);
  return { ...swapped(first.preference, second.preference), tokens: first.tokens + second.tokens, failures };
}

function clipText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}
