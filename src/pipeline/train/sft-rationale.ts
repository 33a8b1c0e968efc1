import type { ChatMessage } from '../../llm/types.js';

/** Words other than the answer a rationale must have: fewer is a bare answer, nothing to learn a path from. */
export const MIN_RATIONALE_WORDS = 5;

/** A reply that talks about the hint it was given: trained without the hint, it would teach a non sequitur. */
const HINT_TALK =
  /\b(hints?|hinted|reference|(given|provided|expected|stated) answer|answer (is|was) (given|provided))\b/i;

/** The message appended to a hard task's recorded prompt when rationalizing (STaR). */
export function hintMessage(reference: string): ChatMessage {
  return {
    role: 'user',
    content:
      `Hint: the correct final answer is ${reference}. Work the task above out step by step so that your reasoning `
      + 'arrives at it, and reply in the format the task asks for. Write as if you had found the answer yourself: '
      + 'do not mention this hint.',
  };
}

/**
 * A recorded prompt with the hint: appended to its last message when that is the user's (chat templates
 * that want user and assistant turns to alternate accept it), else as a user message of its own.
 */
export function withHint(messages: readonly ChatMessage[], reference: string): ChatMessage[] {
  const hint = hintMessage(reference);
  const last = messages.at(-1);
  if (last?.role !== 'user' || typeof last.content !== 'string') return [...messages, hint];
  return [...messages.slice(0, -1), { ...last, content: `${last.content}\n\n${hint.content}` }];
}

/**
 * Why a rationalized reply only restates the hint, or null when it is kept: `mentions_hint` when it speaks
 * of a hint, a reference or a given answer; `bare_answer` when, without the answer itself and the
 * `ANSWER:` label, fewer than MIN_RATIONALE_WORDS words are left.
 */
export function hintLeak(text: string, reference: string): 'mentions_hint' | 'bare_answer' | null {
  if (HINT_TALK.test(text)) return 'mentions_hint';
  const ref = reference.trim().toLowerCase();
  let rest = text.toLowerCase().replace(/\banswer:/g, ' ');
  if (ref) rest = rest.split(ref).join(' ');
  const words = rest.match(/[\p{L}\p{N}]+/gu) ?? [];
  return words.length < MIN_RATIONALE_WORDS ? 'bare_answer' : null;
}
