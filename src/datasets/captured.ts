import type { PromptPayload } from '../trace/payloads.js';
import type { Rollout } from '../trace/records.js';
import { canonicalJson, sha256 } from '../util/hash.js';
import { chatMessages, completionText, promptKey, type ChatMessage } from './messages.js';
import type { RolloutIndex } from './rollout-index.js';

/**
 * Captured gateway sessions as training data. A `collect.source: gateway` run copies each session it takes
 * into a collect rollout whose metadata.captured_from names the session's rollout: the copy has the
 * session's chat spans (prompt spans named `chat`) and rewards, but no task and no coordination spans.
 */
export function isCapturedCopy(r: Pick<Rollout, 'metadata'>): boolean {
  return typeof r.metadata.captured_from === 'string';
}

/** A captured chat call that got a completion. */
export interface CapturedTurn {
  seq: number;
  agent: string | null;
  messages: ChatMessage[];
  completion: string;
}

/** The session's chat calls with a completion, in order (embeddings and failed calls left out). */
export function capturedTurns(
  spans: readonly { seq: number; type: string; name: string; agent: string | null }[],
  payload: (seq: number) => PromptPayload | null,
): CapturedTurn[] {
  const out: CapturedTurn[] = [];
  for (const s of spans) {
    if (s.type !== 'prompt' || s.name !== 'chat') continue;
    const p = payload(s.seq);
    const completion = p && completionText(p);
    if (!p || completion === null || !Array.isArray(p.request?.messages)) continue;
    out.push({ seq: s.seq, agent: s.agent, messages: chatMessages(p.request.messages), completion });
  }
  return out;
}

/** The conversation as one text (the judge's "task" for a session that has none). */
export function conversationText(messages: readonly ChatMessage[]): string {
  return messages.map((m) => `${m.role}: ${m.content}`).join('\n\n');
}

/** A captured session's last prompt and its replies to it that the datasets pair (capturedReplies). */
export interface CapturedReplies {
  prompt: ChatMessage[];
  /** The prompt's key among tasks: `prompt:<sha256 of its messages>`. */
  taskKey: string;
  replies: { seq: number; completion: string }[];
}

/**
 * The session's last chat call's messages as the prompt, with its completion and every other completion of that same
 * prompt (promptKey) that a turn reward scored: a session that sampled its prompt several times, which agreement
 * scores one by one. Null without a last call (metadata.captured_turn) or its completion.
 */
export function capturedReplies(view: RolloutIndex): CapturedReplies | null {
  const last = view.rollout.metadata.captured_turn;
  const p = typeof last === 'number' ? view.prompt(last) : null;
  if (!p?.request?.messages || view.rollout.finalAnswer === null) return null;
  const prompt = chatMessages(p.request.messages);
  const key = promptKey(p.request);
  const replies: CapturedReplies['replies'] = [];
  for (const seq of new Set([...view.rewardedTurns(), last as number])) {
    const q = seq === last ? p : view.prompt(seq);
    const completion = q?.request && promptKey(q.request) === key ? completionText(q) : null;
    if (completion !== null) replies.push({ seq, completion });
  }
  return { prompt, taskKey: `prompt:${sha256(canonicalJson(prompt))}`, replies };
}
