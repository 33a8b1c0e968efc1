import type { ChatResult, TokenLogprob, ToolCall } from './types.js';

interface RawChoice {
  message?: { content?: string | null; tool_calls?: ToolCall[] };
  finish_reason?: string | null;
  logprobs?: { content?: { token: string; logprob: number }[] | null } | null;
  token_ids?: number[] | null;
  prompt_token_ids?: number[] | null;
}

interface RawCompletion {
  model?: string;
  choices?: RawChoice[];
  usage?: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number };
  prompt_token_ids?: number[] | null;
}

/**
 * A 2xx response whose body is not JSON, or a stream without its end: cut off on the way (a
 * close-delimited body ends where the connection did).
 */
export class TruncatedResponseError extends Error {
  readonly code = 'ECONNRESET';
  constructor(body: string, what?: string) {
    super(
      `the response ended early: ${what ?? `its body (${Buffer.byteLength(body)} bytes) is not complete JSON: ${body.slice(0, 200)}`}`,
    );
    this.name = 'TruncatedResponseError';
  }
}

export type RawUsage = NonNullable<RawCompletion['usage']>;

/** The wire's usage as ChatResult has it (a total the server left out is the sum). */
export function usageOf(u: RawUsage): ChatResult['usage'] {
  const promptTokens = u.prompt_tokens ?? 0;
  const completionTokens = u.completion_tokens ?? 0;
  return { promptTokens, completionTokens, totalTokens: u.total_tokens ?? promptTokens + completionTokens };
}

/** Reads an OpenAI chat.completion body, including vLLM's token-id extensions. */
export function parseCompletion(
  body: string,
  meta: { latencyMs: number; attempts: number; model: string },
): ChatResult {
  let raw: RawCompletion;
  try {
    raw = JSON.parse(body) as RawCompletion;
  } catch {
    throw new TruncatedResponseError(body);
  }
  const choice = raw.choices?.[0];
  if (!choice?.message) throw new Error(`the server's response has no choices[0].message: ${body.slice(0, 200)}`);
  const usage = raw.usage ?? {};
  const logprobs: TokenLogprob[] | null =
    choice.logprobs?.content?.map((t) => ({ token: t.token, logprob: t.logprob })) ?? null;
  return {
    content: choice.message.content ?? null,
    toolCalls: choice.message.tool_calls ?? [],
    finishReason: choice.finish_reason ?? 'stop',
    usage: usageOf(usage),
    model: raw.model ?? meta.model,
    latencyMs: meta.latencyMs,
    attempts: meta.attempts,
    logprobs,
    tokenIds: choice.token_ids ?? null,
    promptTokenIds: raw.prompt_token_ids ?? choice.prompt_token_ids ?? null,
    ttftMs: null,
  };
}
