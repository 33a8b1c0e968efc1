import { errorMessage } from '../errors.js';
import type { ChatMessage, LlmClient } from '../llm/types.js';
import { clip } from './exact.js';

/** A judge model asked for a reply in a fixed format. */
export interface JudgeAsk<T> {
  client: LlmClient;
  model: string;
  /** Attempts in all. */
  attempts: number;
  maxTokens: number;
  signal?: AbortSignal;
  /** Reads a reply; throws with what is wrong when it cannot be used. */
  parse: (content: string | null) => T;
  /** What the reply must be, as the retry says it: "Reply with only <format>". */
  format: string;
}

/**
 * Asks the judge at temperature 0 until `parse` accepts a reply: a failed call (after the client's own HTTP
 * retries) is sent again, a malformed reply is answered with what was wrong and the format, `attempts` in
 * all. Cancellation is rethrown. Returns the value or the last problem, with every reply's total tokens.
 */
export async function askJudge<T>(
  ask: JudgeAsk<T>,
  first: ChatMessage[],
): Promise<{ value: T; tokens: number; calls: number } | { failure: string; tokens: number; calls: number }> {
  let messages = first;
  let failure = 'no attempt made';
  let tokens = 0;
  let calls = 0;
  for (let i = 0; i < ask.attempts; i++) {
    ask.signal?.throwIfAborted();
    let content: string | null;
    try {
      const res = await ask.client.chat(
        { model: ask.model, messages, temperature: 0, max_tokens: ask.maxTokens },
        ask.signal ? { signal: ask.signal } : {},
      );
      tokens += res.usage.totalTokens;
      calls++;
      content = res.content;
    } catch (err) {
      ask.signal?.throwIfAborted();
      failure = `the judge call failed: ${errorMessage(err)}`;
      continue;
    }
    try {
      return { value: ask.parse(content), tokens, calls };
    } catch (err) {
      failure = `malformed judge reply (${errorMessage(err)}): "${clip(content ?? '', 80)}"`;
      messages = [
        ...first,
        { role: 'assistant', content: content ?? '' },
        { role: 'user', content: `That reply could not be used: ${errorMessage(err)}. Reply with only ${ask.format}` },
      ];
    }
  }
  return { failure, tokens, calls };
}
