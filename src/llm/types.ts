/** OpenAI chat-completions shapes, as far as massgen-rl uses them. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  name?: string;
}

export interface ToolSpec {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  temperature?: number;
  max_tokens?: number;
  tools?: readonly ToolSpec[];
  tool_choice?: 'auto' | 'required' | 'none';
  parallel_tool_calls?: boolean;
  seed?: number;
  stop?: string[];
}

export interface TokenLogprob {
  token: string;
  logprob: number;
}

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface ChatResult {
  content: string | null;
  toolCalls: ToolCall[];
  finishReason: string;
  usage: Usage;
  model: string;
  latencyMs: number;
  /** Requests sent, including retries. */
  attempts: number;
  /** Per-token logprobs of the completion, when the server returned them. */
  logprobs: TokenLogprob[] | null;
  /** Completion token ids (vLLM `return_token_ids`, or the project's own server). */
  tokenIds: number[] | null;
  promptTokenIds: number[] | null;
  /**
   * Time to first token of a streamed completion: ms from sending the request that answered to the
   * first chunk with content or a tool call (null when not streamed, or nothing came).
   */
  ttftMs: number | null;
}

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** Anything that answers chat requests: the HTTP client, or a scripted double in tests. */
export interface LlmClient {
  chat(request: ChatRequest, opts?: CallOptions): Promise<ChatResult>;
}
