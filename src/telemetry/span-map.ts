import { SpanKind, SpanStatusCode, TraceFlags, type Attributes, type SpanStatus } from '@opentelemetry/api';
import { hrTimeDuration, millisToHrTime } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import type { RolloutTrace } from '../store/index.js';
import type { PromptPayload, ToolPayload } from '../trace/payloads.js';
import type { Span } from '../trace/records.js';
import { sha256 } from '../util/hash.js';
import { contentText, llmAttributes } from './llm-attributes.js';

export const SCOPE = { name: 'massgen-rl' };

const hex = (text: string, chars: number) => sha256(text).slice(0, chars);

/** A rollout's trace id: the same on every export, so that a collector sees a resent span as the same one. */
export const traceIdOf = (rolloutId: string) => hex(`rollout:${rolloutId}`, 32);
/** A span's id from its rollout and seq (the rollout's own root span: seq null). */
export const spanIdOf = (rolloutId: string, seq: number | null) => hex(`span:${rolloutId}:${seq ?? 'root'}`, 16);

const OI_KIND: Record<Span['type'], string> = {
  prompt: 'LLM',
  tool: 'TOOL',
  reward: 'EVALUATOR',
  coordination: 'CHAIN',
  message: 'CHAIN',
};

function primitive(v: unknown): v is string | number | boolean {
  return typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
}

/** A span's own name, kind, status and attributes, by its type. */
function described(s: Span): { name: string; kind: SpanKind; status: SpanStatus; attributes: Attributes } {
  const payload = (s.payload ?? {}) as Record<string, unknown>;
  const ok: SpanStatus = { code: SpanStatusCode.OK };
  const failed = (message: unknown): SpanStatus => ({ code: SpanStatusCode.ERROR, message: String(message) });
  if (s.type === 'prompt' && (payload as Partial<PromptPayload>).request) {
    const p = payload as unknown as PromptPayload;
    const attributes = llmAttributes(p);
    for (const key of ['round', 'attempt', 'turn_id', 'latency_ms', 'ttft_ms', 'sample_index'] as const)
      if (primitive(p[key])) attributes[`massgen_rl.${key}`] = p[key];
    // a call MassGen's protocol cancelled (its answer superseded) did not fail: its status is left unset
    if (p.cancelled) attributes['massgen_rl.cancelled'] = true;
    const status = p.error && !p.cancelled ? failed(p.error) : p.cancelled ? { code: SpanStatusCode.UNSET } : ok;
    return { name: `chat ${p.request.model}`, kind: SpanKind.CLIENT, status, attributes };
  }
  if (s.type === 'tool') {
    const p = payload as unknown as ToolPayload;
    const args = JSON.stringify(p.args ?? null);
    const attributes: Attributes = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': p.name,
      'gen_ai.tool.call.arguments': args,
      'openinference.span.kind': 'TOOL',
      'tool.name': p.name,
      'input.value': args,
      'input.mime_type': 'application/json',
    };
    if (p.result !== null && p.result !== undefined) {
      attributes['gen_ai.tool.call.result'] = p.result;
      attributes['output.value'] = p.result;
    }
    return {
      name: `execute_tool ${p.name}`,
      kind: SpanKind.INTERNAL,
      status: p.success === false ? failed(p.error ?? 'the tool failed') : ok,
      attributes,
    };
  }
  // Rewards, coordination events and messages: their payload's plain fields, and the whole payload as JSON.
  const attributes: Attributes = {
    'openinference.span.kind': OI_KIND[s.type],
    'massgen_rl.payload': JSON.stringify(payload),
  };
  for (const [key, value] of Object.entries(payload)) if (primitive(value)) attributes[`massgen_rl.${key}`] = value;
  if (s.type === 'reward') attributes['massgen_rl.reward.family'] = s.name;
  const text = payload.content ?? payload.reason;
  if (text !== undefined && text !== null) attributes['output.value'] = contentText(text);
  return { name: s.type === 'reward' ? `reward ${s.name}` : s.name, kind: SpanKind.INTERNAL, status: ok, attributes };
}

/** Each family's rollout-channel value (their mean when it gave several). */
function familyValues(trace: RolloutTrace): Attributes {
  const sums = new Map<string, { sum: number; n: number }>();
  for (const r of trace.rewards) {
    if (r.channel !== 'rollout') continue;
    const s = sums.get(r.family) ?? { sum: 0, n: 0 };
    sums.set(r.family, { sum: s.sum + r.value, n: s.n + 1 });
  }
  return Object.fromEntries([...sums].map(([family, s]) => [`massgen_rl.reward.${family}`, s.sum / s.n]));
}

/** The first user message a rollout's model calls were asked: what the team was given. */
function taskText(spans: Span[]): string | undefined {
  const first = spans.find((s) => s.type === 'prompt') as Span | undefined;
  const messages = (first?.payload as Partial<PromptPayload> | undefined)?.request?.messages as
    { role?: string; content?: unknown }[] | undefined;
  const user = messages?.find((m) => m.role === 'user');
  return user ? contentText(user.content) : undefined;
}

function readable(o: {
  traceId: string;
  spanId: string;
  parentId: string | null;
  startMs: number;
  endMs: number;
  resource: Resource;
  described: ReturnType<typeof described>;
}): ReadableSpan {
  const startTime = millisToHrTime(o.startMs);
  const endTime = millisToHrTime(Math.max(o.startMs, o.endMs));
  const context = { traceId: o.traceId, spanId: o.spanId, traceFlags: TraceFlags.SAMPLED };
  return {
    ...o.described,
    spanContext: () => context,
    parentSpanContext: o.parentId
      ? { traceId: o.traceId, spanId: o.parentId, traceFlags: TraceFlags.SAMPLED }
      : undefined,
    startTime,
    endTime,
    duration: hrTimeDuration(startTime, endTime),
    ended: true,
    links: [],
    events: [],
    resource: o.resource,
    instrumentationScope: SCOPE,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

/**
 * A finished rollout as OTLP spans: one root span for the rollout (task, final answer, status, each reward family's
 * value) and one span per stored span under its parent, ids derived from the rollout's id and the span's seq.
 */
export function rolloutSpans(trace: RolloutTrace, resource: Resource): ReadableSpan[] {
  const { rollout: r, spans } = trace;
  const traceId = traceIdOf(r.id);
  const rootId = spanIdOf(r.id, null);
  const seqs = new Set(spans.map((s) => s.seq));
  const lastEnd = spans.reduce((end, s) => Math.max(end, s.startedAt + s.durationMs), r.startedAt);
  const task = taskText(spans);
  const rootAttributes: Attributes = {
    'gen_ai.operation.name': 'invoke_workflow',
    'gen_ai.conversation.id': r.id,
    'openinference.span.kind': 'CHAIN',
    'session.id': r.id,
    metadata: JSON.stringify(r.metadata),
    'massgen_rl.rollout_id': r.id,
    'massgen_rl.rollout_num': r.num,
    'massgen_rl.source': r.source,
    'massgen_rl.status': r.status,
    'massgen_rl.tokens': r.tokens,
    'massgen_rl.tool_calls': r.toolCalls,
    'massgen_rl.wall_ms': r.wallMs,
    ...familyValues(trace),
  };
  const optional = {
    'massgen_rl.task_id': r.taskId,
    'massgen_rl.run_id': r.runId,
    'massgen_rl.resource_set_id': r.resourceSetId,
    'massgen_rl.winner': r.winner,
    'massgen_rl.total_reward': r.totalReward,
    'input.value': task,
    'output.value': r.finalAnswer,
  };
  for (const [key, value] of Object.entries(optional))
    if (value !== null && value !== undefined) rootAttributes[key] = value;
  const root = readable({
    traceId,
    spanId: rootId,
    parentId: null,
    startMs: r.startedAt,
    endMs: r.finishedAt ?? lastEnd,
    resource,
    described: {
      name: `${r.source} ${r.taskId ?? r.id}`,
      kind: SpanKind.INTERNAL,
      status:
        r.status === 'failed'
          ? { code: SpanStatusCode.ERROR, message: r.error ?? 'failed' }
          : { code: SpanStatusCode.OK },
      attributes: rootAttributes,
    },
  });
  return [
    root,
    ...spans.map((s) => {
      const d = described(s);
      d.attributes['massgen_rl.rollout_id'] = r.id;
      d.attributes['massgen_rl.span_type'] = s.type;
      if (s.agent) {
        d.attributes['massgen_rl.agent'] = s.agent;
        d.attributes['gen_ai.agent.name'] = s.agent;
      }
      const parent = s.parentSeq !== null && seqs.has(s.parentSeq) ? spanIdOf(r.id, s.parentSeq) : rootId;
      return readable({
        traceId,
        spanId: spanIdOf(r.id, s.seq),
        parentId: parent,
        startMs: s.startedAt,
        endMs: s.startedAt + s.durationMs,
        resource,
        described: d,
      });
    }),
  ];
}
