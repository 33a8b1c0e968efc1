import { encodeObject } from '../llm/json-text.js';
import type { ChatMessage, ChatResult, ToolSpec } from '../llm/types.js';
import type { PromptPayload } from '../trace/payloads.js';
import type { OrchestrationResult, TeamAgent, TraceSink } from './types.js';

export type Usage = OrchestrationResult['usage'];

export function emptyUsage(): Usage {
  return { promptTokens: 0, completionTokens: 0, totalTokens: 0, llmCalls: 0, toolCalls: 0 };
}

export interface CallSite {
  agent: TeamAgent;
  sink: TraceSink;
  usage: Usage;
  turnId: string;
  round: number;
  parentSeq: number | null;
  signal: AbortSignal;
  name?: string;
}

/**
 * One LLM call, always recorded as a prompt span: completed, failed or cancelled. A decision call of an
 * agent with `samples` k > 1 also asks the same request k − 1 more times, concurrently: `sample` spans
 * that feed training groups (GRPO) and never act; the call returns once they have settled.
 */
export async function recordedCall(
  site: CallSite,
  messages: ChatMessage[],
  attempt: number,
  tools?: readonly ToolSpec[],
): Promise<{ result: ChatResult; seq: number }> {
  const k = site.name === undefined ? (site.agent.samples ?? 1) : 1;
  const samples = Array.from({ length: k - 1 }, (_, i) =>
    singleCall({ ...site, name: 'sample' }, messages, attempt, tools, { sample_index: i + 1 }).catch(() => undefined),
  );
  try {
    return await singleCall(site, messages, attempt, tools);
  } finally {
    if (samples.length) await Promise.all(samples);
  }
}

async function singleCall(
  site: CallSite,
  messages: ChatMessage[],
  attempt: number,
  tools?: readonly ToolSpec[],
  extra?: { sample_index: number },
): Promise<{ result: ChatResult; seq: number }> {
  const { agent } = site;
  // A shallow copy: turns only append messages, never edit them.
  const seed = agent.seed === undefined ? undefined : callSeed(agent.seed, site, attempt, extra?.sample_index ?? 0);
  const request: PromptPayload['request'] = {
    model: agent.model,
    messages: [...messages],
    temperature: agent.temperature,
    max_tokens: agent.maxTokens,
    ...(tools?.length ? { tools } : {}),
    ...(seed === undefined ? {} : { seed }),
  };
  const call: PromptCall = {
    site,
    startedAt: Date.now(),
    t0: performance.now(),
    base: { turn_id: site.turnId, round: site.round, attempt, request, ...extra },
    requestJson: encodeObject(request),
  };
  site.usage.llmCalls++;
  let result: ChatResult;
  try {
    // A native turn acts through one call at a time (prose is no action; an ordinary tool's result comes back first)
    result = await agent.client.chat(
      {
        model: agent.model,
        messages,
        temperature: agent.temperature,
        max_tokens: agent.maxTokens,
        ...(tools?.length ? { tools, tool_choice: 'required', parallel_tool_calls: false } : {}),
        ...(seed === undefined ? {} : { seed }),
      },
      { signal: site.signal },
    );
  } catch (err) {
    recordFailure(call, err);
    throw err;
  }
  return { result, seq: recordSuccess(call, result) };
}

interface PromptCall {
  site: CallSite;
  startedAt: number;
  t0: number;
  base: Pick<PromptPayload, 'turn_id' | 'round' | 'attempt' | 'request'> & { sample_index?: number };
  /** The request's JSON: the span's is assembled around it, reusing the constant system prompt and tool specs. */
  requestJson: string;
}

function recordSuccess(call: PromptCall, result: ChatResult): number {
  const { usage } = call.site;
  usage.promptTokens += result.usage.promptTokens;
  usage.completionTokens += result.usage.completionTokens;
  usage.totalTokens += result.usage.totalTokens;
  return record(call, {
    ...call.base,
    response: { content: result.content, tool_calls: result.toolCalls, finish_reason: result.finishReason },
    usage: {
      prompt_tokens: result.usage.promptTokens,
      completion_tokens: result.usage.completionTokens,
      total_tokens: result.usage.totalTokens,
    },
    latency_ms: result.latencyMs,
    ...(typeof result.ttftMs === 'number' ? { ttft_ms: result.ttftMs } : {}),
    logprobs: result.logprobs,
    token_ids: result.tokenIds,
    prompt_token_ids: result.promptTokenIds,
  });
}

function recordFailure(call: PromptCall, err: unknown): void {
  record(call, {
    ...call.base,
    response: null,
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    latency_ms: performance.now() - call.t0,
    ...(call.site.signal.aborted ? { cancelled: true } : { error: (err as Error).message }),
  });
}

function record(call: PromptCall, payload: PromptPayload): number {
  const { site } = call;
  return site.sink.span({
    type: 'prompt',
    name: site.name ?? 'chat',
    agent: site.agent.id,
    parentSeq: site.parentSeq,
    startedAt: call.startedAt,
    durationMs: performance.now() - call.t0,
    payload,
    payloadJson: encodeObject(payload as unknown as Record<string, unknown>, { request: call.requestJson }),
  });
}

/** A call's seed: FNV-1a over the agent's seed, the round, the attempt, the call's kind and its sample index (31 bits). */
function callSeed(base: number, site: CallSite, attempt: number, sample: number): number {
  const key = `${base}|${site.round}|${attempt}|${site.name ?? 'chat'}|${sample}`;
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 0) & 0x7fffffff;
}
