import type { Store } from '../store/index.js';
import { OTLP_SOURCE } from '../store/rollouts.js';
import type { SpanInput } from '../trace/records.js';
import { sha256 } from '../util/hash.js';
import { isLlmSpan, isToolSpan, promptPayload } from './otlp-llm.js';
import { OtlpRequestError, type OtlpSpan } from './otlp-read.js';

export interface IngestResult {
  /** Rollouts created and rollouts that got more spans. */
  created: number;
  extended: number;
  /** Spans stored: model calls, tool calls, and the rest kept as message spans. */
  spans: { llm: number; tool: number; message: number };
  /** Spans stored already (sent again): skipped. */
  duplicates: number;
}

/** The session a span belongs to: its session attribute, else any span of its trace's, else its trace. */
function sessionKeys(spans: OtlpSpan[]): Map<string, string> {
  const byTrace = new Map<string, string>();
  for (const s of spans) {
    const session = s.attributes['session.id'] ?? s.attributes['gen_ai.conversation.id'];
    if (typeof session === 'string' && session && !byTrace.has(s.traceId)) byTrace.set(s.traceId, `session:${session}`);
  }
  return new Map(spans.map((s) => [s.spanId, byTrace.get(s.traceId) ?? `trace:${s.traceId}`]));
}

/** Refuses a request whose spans' parent links loop (a span its own ancestor). */
function checkNoCycles(spans: OtlpSpan[]): void {
  const parent = new Map(spans.map((s) => [s.spanId, s.parentSpanId]));
  for (const s of spans) {
    const seen = new Set<string>([s.spanId]);
    for (let p = s.parentSpanId; p && parent.has(p); p = parent.get(p)!) {
      if (seen.has(p)) throw new OtlpRequestError(`span ${s.spanId}: its parents loop back to span ${p}`);
      seen.add(p);
    }
  }
}

const agentOf = (s: OtlpSpan): string | null => {
  const a = s.attributes['gen_ai.agent.name'] ?? s.attributes['agent.name'] ?? s.resource['service.name'];
  return typeof a === 'string' && a ? a : null;
};

/**
 * Logfire's start marker of a span still running (its copy at the start, a child of it): the span itself comes when
 * it ends, so a marker is kept as a message, never as a second model or tool call.
 */
const isPendingMarker = (s: OtlpSpan) => s.attributes['logfire.span_type'] === 'pending_span';

/**
 * Logfire's span around a streamed call's request: it ends when the stream opens, with no reply; the call itself (the
 * request and the reply) is the `streaming response from …` log Logfire writes when the stream ends.
 */
const isStreamOpening = (s: OtlpSpan) =>
  s.attributes['logfire.span_type'] === 'span'
  && String(s.attributes['logfire.msg_template'] ?? '').startsWith('Chat Completion')
  && s.attributes['gen_ai.output.messages'] === undefined
  && s.attributes['response_data'] === undefined
  && s.status.code !== 2;

/** A received span as a stored one: a model call as a `chat` prompt span, a tool call, anything else a message. */
function storedSpan(s: OtlpSpan, parentSeq: number | null): { input: SpanInput; kind: keyof IngestResult['spans'] } {
  const otlp = { trace_id: s.traceId, span_id: s.spanId, parent_span_id: s.parentSpanId };
  const base = { agent: agentOf(s), parentSeq, startedAt: s.startMs, durationMs: Math.max(0, s.endMs - s.startMs) };
  const marker = isPendingMarker(s) || isStreamOpening(s);
  if (!marker && isLlmSpan(s))
    return { kind: 'llm', input: { ...base, type: 'prompt', name: 'chat', payload: { ...promptPayload(s), otlp } } };
  if (!marker && isToolSpan(s)) {
    const a = s.attributes;
    const name = String(a['gen_ai.tool.name'] ?? a['tool.name'] ?? s.name);
    const args = a['gen_ai.tool.call.arguments'] ?? a['input.value'] ?? null;
    const result = a['gen_ai.tool.call.result'] ?? a['output.value'] ?? null;
    const payload = {
      turn_id: s.spanId,
      name,
      args: typeof args === 'string' ? parseMaybe(args) : args,
      result: result === null ? null : String(result),
      success: s.status.code !== 2,
      ...(s.status.code === 2 ? { error: s.status.message || 'the tool failed' } : {}),
      otlp,
    };
    return { kind: 'tool', input: { ...base, type: 'tool', name, payload } };
  }
  return {
    kind: 'message',
    input: { ...base, type: 'message', name: s.name || 'span', payload: messagePayload(s, otlp) },
  };
}

function messagePayload(s: OtlpSpan, otlp: { trace_id: string; span_id: string; parent_span_id: string | null }) {
  return {
    otlp: { ...otlp, name: s.name, kind: s.kind, status: s.status, attributes: s.attributes, events: s.events },
  };
}

function parseMaybe(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

const rolloutIdOf = (key: string) => `otlp-${sha256(key).slice(0, 20)}`;

/**
 * Stores the spans of one OTLP request as rollouts, one per session, in one transaction (a refused request stores
 * nothing): new spans appended under their parents (a parent not received yet: under the rollout), spans stored
 * already skipped, and each rollout's totals, final answer and times recomputed.
 */
export async function ingestSpans(store: Store, received: OtlpSpan[]): Promise<IngestResult> {
  const unique = [...new Map(received.map((s) => [s.spanId, s])).values()];
  checkNoCycles(unique);
  const keys = sessionKeys(unique);
  const groups = new Map<string, OtlpSpan[]>();
  for (const s of unique) groups.set(keys.get(s.spanId)!, [...(groups.get(keys.get(s.spanId)!) ?? []), s]);
  const result: IngestResult = { created: 0, extended: 0, spans: { llm: 0, tool: 0, message: 0 }, duplicates: 0 };
  await store.write(() => {
    for (const [key, spans] of groups) writeSession(store, key, spans, result);
  });
  return result;
}

function writeSession(store: Store, key: string, spans: OtlpSpan[], result: IngestResult): void {
  const id = rolloutIdOf(key);
  const existing = store.rollouts.get(id);
  const stored = existing ? store.spans.list(id) : [];
  const seqOf = new Map<string, number>();
  for (const s of stored) {
    const spanId = (s.payload as { otlp?: { span_id?: string } } | null)?.otlp?.span_id;
    if (spanId) seqOf.set(spanId, s.seq);
  }
  const fresh = spans.filter((s) => !seqOf.has(s.spanId));
  result.duplicates += spans.length - fresh.length;
  if (!fresh.length) return;
  // Parents first (then by start time), so that each span's parent has its seq when it is appended.
  const ordered = parentsFirst(fresh);
  let next = stored.reduce((m, s) => Math.max(m, s.seq), 0);
  const inputs = ordered.map((s) => {
    const { input, kind } = storedSpan(s, s.parentSpanId ? (seqOf.get(s.parentSpanId) ?? null) : null);
    seqOf.set(s.spanId, ++next);
    result.spans[kind]++;
    return input;
  });
  if (!existing) {
    const first = ordered[0]!;
    store.rollouts.start({
      id,
      source: OTLP_SOURCE,
      metadata: { otlp: { session: key, service: first.resource['service.name'] ?? null, scope: first.scope } },
    });
    result.created++;
  } else result.extended++;
  store.spans.append(id, inputs);
  finishSession(store, id);
}

function parentsFirst(spans: OtlpSpan[]): OtlpSpan[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const depth = (s: OtlpSpan): number => {
    let d = 0;
    for (let p = s.parentSpanId; p && byId.has(p); p = byId.get(p)!.parentSpanId) d++;
    return d;
  };
  return [...spans].sort((a, b) => depth(a) - depth(b) || a.startMs - b.startMs);
}

/** A session's rollout as its spans say now: tokens, calls, the last reply as its final answer, its times. */
function finishSession(store: Store, id: string): void {
  const spans = store.spans.list(id);
  let tokens = 0;
  let answer: string | null = null;
  for (const s of [...spans].sort((a, b) => a.startedAt - b.startedAt)) {
    if (s.type !== 'prompt') continue;
    const p = s.payload as { usage?: { total_tokens?: number }; response?: { content?: string | null } | null };
    tokens += p.usage?.total_tokens ?? 0;
    if (p.response?.content) answer = p.response.content;
  }
  const start = Math.min(...spans.map((s) => s.startedAt));
  const end = Math.max(...spans.map((s) => s.startedAt + s.durationMs));
  store.rollouts.finish(id, {
    status: 'completed',
    finalAnswer: answer,
    tokens,
    toolCalls: spans.filter((s) => s.type === 'tool').length,
    messages: spans.filter((s) => s.type === 'prompt').length,
    wallMs: end - start,
  });
  store.rollouts.setImportedTimes(id, start, end);
}
