import type { LlmClient } from '../../llm/types.js';
import type { ChatTurn } from '../../prompt-opt/index.js';

/**
 * A worst case of the prompt's tokens without a tokenizer, plus the chat template: a byte-level tokenizer
 * can spend one token per UTF-8 byte (a CJK character is 3 bytes, an emoji 4), never more.
 */
export function promptTokenBound(messages: readonly ChatTurn[]): number {
  return messages.reduce((n, m) => n + Buffer.byteLength(m.content, 'utf8') + 16, 64);
}

export interface OptimizerCall {
  content: string;
  tokens: number;
}

/**
 * One optimizer call inside the token budget: made only when its worst case (prompt bound + max tokens)
 * fits what is left, with the completion capped to what is left; `claim` records the worst case before
 * the call (so a crash during it still counts it), `settle` the tokens it really used.
 */
export async function callOptimizer(o: {
  client: LlmClient;
  model: string;
  messages: ChatTurn[];
  maxTokens: number;
  temperature: number;
  seed: number;
  left: number;
  signal: AbortSignal;
  claim: (worst: number) => void;
  settle: (used: number) => void;
}): Promise<OptimizerCall | { outOfBudget: true }> {
  const bound = promptTokenBound(o.messages);
  const maxTokens = Math.min(o.maxTokens, o.left - bound);
  if (maxTokens < Math.min(o.maxTokens, 64)) return { outOfBudget: true };
  o.claim(bound + maxTokens);
  let used = bound + maxTokens;
  try {
    const r = await o.client.chat(
      { model: o.model, messages: o.messages, max_tokens: maxTokens, temperature: o.temperature, seed: o.seed },
      { signal: o.signal },
    );
    used = r.usage.totalTokens || r.usage.promptTokens + r.usage.completionTokens || used;
    return { content: r.content ?? '', tokens: used };
  } finally {
    o.settle(used);
  }
}
