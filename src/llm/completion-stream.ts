import { createParser, type EventSourceParser } from 'eventsource-parser';
import { TruncatedResponseError, usageOf } from './parse.js';
import type { ChatResult, TokenLogprob, ToolCall } from './types.js';

interface RawDelta {
  content?: string | null;
  tool_calls?: { index?: number; id?: string; type?: string; function?: { name?: string; arguments?: string } }[];
}

interface RawChunk {
  model?: string;
  choices?: {
    index?: number;
    delta?: RawDelta;
    finish_reason?: string | null;
    logprobs?: { content?: { token: string; logprob: number }[] | null } | null;
    token_ids?: number[] | null;
    prompt_token_ids?: number[] | null;
  }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null;
  prompt_token_ids?: number[] | null;
  error?: { message?: string } | string;
}

/** One event's data at most (a chunk is a few hundred bytes; vLLM's prompt_token_ids can be long). */
const MAX_EVENT_CHARS = 16 * 1024 * 1024;

/**
 * One streamed chat completion (OpenAI server-sent events of chat.completion.chunk objects, then
 * `data: [DONE]`), assembled into the ChatResult the non-streamed body would give. `sink` takes the
 * response body of a 2xx event stream (any other response is read as usual).
 */
export class CompletionStream {
  /** The response was an event stream (else its body is a whole completion, or an error). */
  active = false;
  private readonly sent = performance.now();
  private firstTokenAt: number | null = null;
  private readonly decoder = new TextDecoder();
  private readonly events: EventSourceParser;
  private done = false;
  private model: string | undefined;
  private content = '';
  private sawContent = false;
  private readonly calls: { id: string; name: string; arguments: string }[] = [];
  private finishReason: string | null = null;
  private usage: NonNullable<RawChunk['usage']> = {};
  private logprobs: TokenLogprob[] | null = null;
  private tokenIds: number[] | null = null;
  private promptTokenIds: number[] | null = null;

  constructor() {
    this.events = createParser({
      onEvent: (e) => this.event(e.data),
      onError: (err) => {
        if (err.type !== 'max-buffer-size-exceeded') return;
        throw new Error(`a streamed event is over ${MAX_EVENT_CHARS} characters`);
      },
      maxBufferSize: MAX_EVENT_CHARS,
    });
  }

  readonly sink = (status: number, headers: ReadonlyMap<string, string>): ((bytes: Buffer) => void) | undefined => {
    const events = (headers.get('content-type') ?? '').includes('text/event-stream');
    if (status < 200 || status >= 300 || !events) return undefined;
    this.active = true;
    return (bytes) => this.events.feed(this.decoder.decode(bytes, { stream: true }));
  };

  /** The assembled completion; a stream that ended before `data: [DONE]` was cut off on the way. */
  result(meta: { latencyMs: number; attempts: number; model: string }): ChatResult {
    if (!this.done) throw new TruncatedResponseError('', 'the stream ended before data: [DONE]');
    const toolCalls = this.calls.flatMap((c, i): ToolCall[] => [
      { id: c.id || `call_${i}`, type: 'function', function: { name: c.name, arguments: c.arguments } },
    ]);
    return {
      // As a whole completion has it: null beside tool calls, or when no content came at all.
      content: this.content !== '' ? this.content : toolCalls.length || !this.sawContent ? null : '',
      toolCalls,
      finishReason: this.finishReason ?? 'stop',
      usage: usageOf(this.usage),
      model: this.model ?? meta.model,
      latencyMs: meta.latencyMs,
      attempts: meta.attempts,
      logprobs: this.logprobs,
      tokenIds: this.tokenIds,
      promptTokenIds: this.promptTokenIds,
      ttftMs: this.firstTokenAt === null ? null : this.firstTokenAt - this.sent,
    };
  }

  private event(data: string): void {
    if (data === '[DONE]') {
      this.done = true;
      return;
    }
    let chunk: RawChunk;
    try {
      chunk = JSON.parse(data) as RawChunk;
    } catch {
      throw new Error(`the server streamed an event that is not JSON: ${data.slice(0, 200)}`);
    }
    if (chunk.error) {
      const e = chunk.error;
      const message = typeof e === 'string' ? e : (e.message ?? data.slice(0, 200));
      throw new Error(`the server reported an error mid-stream: ${message}`);
    }
    this.model ??= chunk.model;
    if (chunk.usage) this.usage = chunk.usage;
    if (chunk.prompt_token_ids) this.promptTokenIds = chunk.prompt_token_ids;
    const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
    if (!choice) return;
    if (choice.prompt_token_ids) this.promptTokenIds ??= choice.prompt_token_ids;
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    if (choice.logprobs?.content) {
      this.logprobs ??= [];
      for (const t of choice.logprobs.content) this.logprobs.push({ token: t.token, logprob: t.logprob });
    }
    if (choice.token_ids) (this.tokenIds ??= []).push(...choice.token_ids);
    if (choice.delta) this.delta(choice.delta);
  }

  private delta(delta: RawDelta): void {
    if (typeof delta.content === 'string') {
      this.sawContent = true;
      this.content += delta.content;
      if (delta.content !== '') this.firstTokenAt ??= performance.now();
    }
    for (const d of delta.tool_calls ?? []) {
      this.firstTokenAt ??= performance.now();
      const call = (this.calls[d.index ?? 0] ??= { id: '', name: '', arguments: '' });
      // The id and name come whole (in the call's first delta); the arguments in fragments.
      if (d.id && !call.id) call.id = d.id;
      if (d.function?.name && !call.name) call.name = d.function.name;
      if (d.function?.arguments) call.arguments += d.function.arguments;
    }
  }
}
