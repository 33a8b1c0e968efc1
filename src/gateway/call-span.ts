import { errorMessage } from '../errors.js';
import { parseCompletion } from '../llm/parse.js';
import type { ChatResult } from '../llm/types.js';
import type { GatewaySystemPrompt, PromptPayload } from '../trace/payloads.js';
import type { SpanInput } from '../trace/records.js';
import type { Forwarded } from './forward.js';
import type { Session } from './sessions.js';

/** One call as the gateway captured it; made into its span off the request path. */
export interface CapturedCall {
  callId: string;
  session: Session;
  agent: string | null;
  client: string;
  /** Epoch ms when the request arrived. */
  startedAt: number;
  latencyMs: number;
  /** The request body as the backend got it (the client's, unless its system prompt was replaced). */
  request: Record<string, unknown>;
  backend: { name: string; model: string };
  stream: boolean;
  forwarded: Forwarded;
  /** chat (the default) or embeddings. */
  kind?: 'chat' | 'embeddings';
  /** The set that answered: the canary's when set at capture, else production's when the call was written. */
  resourceSetId?: string | null;
  /** The client's system prompt was replaced by the agent's (`request` holds what the backend got). */
  systemPrompt?: GatewaySystemPrompt;
}

/** A captured call's tokens, as its usage reported them. */
export interface CallUsage {
  prompt: number;
  completion: number;
}

const REQUEST_KEYS = ['temperature', 'max_tokens', 'tools', 'seed'] as const;

/** The call's prompt span: the payload collect's LLM-call spans have, plus what the gateway knows. */
export function callSpan(c: CapturedCall): { span: SpanInput; usage: CallUsage } {
  const f = c.forwarded;
  let result: ChatResult | undefined = f.result;
  let error = f.error;
  if (f.body !== undefined) {
    try {
      result = parseCompletion(f.body, { latencyMs: c.latencyMs, attempts: f.attempts, model: c.backend.model });
    } catch (err) {
      error = errorMessage(err);
    }
  }
  const request: PromptPayload['request'] = { model: c.backend.name, messages: c.request.messages as unknown[] };
  for (const k of REQUEST_KEYS) {
    if (c.request[k] !== undefined && c.request[k] !== null) Object.assign(request, { [k]: c.request[k] });
  }
  const gateway = {
    client: c.client,
    backend: c.backend.name,
    backend_model: result?.model ?? c.backend.model,
    stream: c.stream,
    status: f.status,
    resource_set_id: c.resourceSetId ?? null,
    ...(c.systemPrompt ? { system_prompt: c.systemPrompt } : {}),
  };
  const base = { turn_id: c.callId, round: 0, attempt: f.attempts, request, latency_ms: c.latencyMs, gateway };
  const payload: PromptPayload =
    result && !error
      ? {
          ...base,
          response: { content: result.content, tool_calls: result.toolCalls, finish_reason: result.finishReason },
          usage: {
            prompt_tokens: result.usage.promptTokens,
            completion_tokens: result.usage.completionTokens,
            total_tokens: result.usage.totalTokens,
          },
          ...(typeof result.ttftMs === 'number' ? { ttft_ms: result.ttftMs } : {}),
          logprobs: result.logprobs,
          token_ids: result.tokenIds,
          prompt_token_ids: result.promptTokenIds,
        }
      : {
          ...base,
          response: null,
          usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
          ...(f.cancelled ? { cancelled: true } : { error: error ?? `status ${f.status}` }),
        };
  return {
    span: { type: 'prompt', name: 'chat', agent: c.agent, startedAt: c.startedAt, durationMs: c.latencyMs, payload },
    usage: { prompt: payload.usage.prompt_tokens, completion: payload.usage.completion_tokens },
  };
}
