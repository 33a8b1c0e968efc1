import type { SpanInput } from '../trace/records.js';
import type { CallUsage, CapturedCall } from './call-span.js';

/** Inputs kept in an embeddings span (the vectors never are): the first few, each cut short. */
const KEPT_INPUTS = 8;
const KEPT_CHARS = 500;

interface EmbeddingsBody {
  data?: { embedding?: unknown }[];
  usage?: { prompt_tokens?: unknown; total_tokens?: unknown };
  model?: unknown;
}

/** How many vectors of how many dimensions an answer holds (float arrays, or base64 of float32). */
function shape(body: EmbeddingsBody): { count: number; dimensions: number | null } {
  const data = Array.isArray(body.data) ? body.data : [];
  const first = data[0]?.embedding;
  const dimensions = Array.isArray(first)
    ? first.length
    : typeof first === 'string'
      ? Math.floor(Buffer.byteLength(first, 'base64') / 4)
      : null;
  return { count: data.length, dimensions };
}

function keptInputs(input: unknown): unknown[] {
  const items = Array.isArray(input) && (input.length === 0 || typeof input[0] !== 'number') ? input : [input];
  return items
    .slice(0, KEPT_INPUTS)
    .map((x) => (typeof x === 'string' ? x.slice(0, KEPT_CHARS) : { tokens: (x as unknown[]).length }));
}

function count(input: unknown): number {
  return Array.isArray(input) && input.length > 0 && typeof input[0] !== 'number' ? input.length : 1;
}

/**
 * An embeddings call as a `message` span named `embeddings` (prompt spans are chat calls datasets train
 * on): the inputs (a few, cut short), how many vectors of how many dimensions came back, the usage.
 */
export function embeddingSpan(c: CapturedCall): { span: SpanInput; usage: CallUsage } {
  const f = c.forwarded;
  let response: { count: number; dimensions: number | null } | null = null;
  let promptTokens = 0;
  let backendModel = c.backend.model;
  let error = f.error;
  if (f.body !== undefined) {
    try {
      const body = JSON.parse(f.body) as EmbeddingsBody;
      response = shape(body);
      const n = Number(body.usage?.prompt_tokens);
      promptTokens = Number.isFinite(n) && n > 0 ? n : 0;
      if (typeof body.model === 'string') backendModel = body.model;
    } catch {
      error = 'the backend answered with a body that is not JSON';
    }
  }
  const r = c.request;
  const request = {
    model: c.backend.name,
    input_count: count(r.input),
    input: keptInputs(r.input),
    encoding_format: r.encoding_format ?? 'float',
    ...(r.dimensions !== undefined ? { dimensions: r.dimensions } : {}),
  };
  const payload = {
    kind: 'embeddings',
    turn_id: c.callId,
    request,
    response: error ? null : response,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    latency_ms: c.latencyMs,
    gateway: {
      client: c.client,
      backend: c.backend.name,
      backend_model: backendModel,
      stream: false,
      status: f.status,
    },
    ...(error ? { error } : {}),
  };
  return {
    span: {
      type: 'message',
      name: 'embeddings',
      agent: c.agent,
      startedAt: c.startedAt,
      durationMs: c.latencyMs,
      payload,
    },
    usage: { prompt: promptTokens, completion: 0 },
  };
}
