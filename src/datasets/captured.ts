import type { PromptPayload } from '../trace/payloads.js';
import type { Rollout } from '../trace/records.js';
import { chatMessages, completionText, type ChatMessage } from './messages.js';

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
