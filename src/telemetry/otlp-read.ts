import { UserError } from '../errors.js';
import { decodeProtobufRequest } from './otlp-wire.js';

/** One span of an OTLP request, read and checked. */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  /** OTLP's SpanKind: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  /** Epoch milliseconds (from the nanoseconds sent). */
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  events: { name: string; timeMs: number; attributes: Record<string, unknown> }[];
  status: { code: number; message: string };
  /** The attributes of its resource (service.name, …) and the name of its instrumentation scope. */
  resource: Record<string, unknown>;
  scope: string;
}

/** A request the receiver refuses: the message names the field (`resourceSpans[0].scopeSpans[1].spans[2].spanId`). */
export class OtlpRequestError extends UserError {}

type Json = Record<string, unknown>;

const list = (v: unknown, at: string): Json[] => {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new OtlpRequestError(`${at}: expected a list`);
  return v.map((x, i) => {
    if (!x || typeof x !== 'object' || Array.isArray(x)) throw new OtlpRequestError(`${at}[${i}]: expected an object`);
    return x as Json;
  });
};

function hexId(v: unknown, chars: number, at: string, optional: boolean): string | null {
  if ((v === undefined || v === '' || v === null) && optional) return null;
  if (typeof v !== 'string' || !new RegExp(`^[0-9a-fA-F]{${chars}}$`).test(v) || /^0+$/.test(v))
    throw new OtlpRequestError(`${at}: expected ${chars} hex digits, not all zero`);
  return v.toLowerCase();
}

function nanosToMs(v: unknown, at: string): number {
  const text = typeof v === 'number' ? String(Math.trunc(v)) : v;
  if (typeof text !== 'string' || !/^\d{1,20}$/.test(text)) throw new OtlpRequestError(`${at}: expected nanoseconds`);
  return Number(BigInt(text) / 1000n) / 1000;
}

/** How deep attribute values may nest (lists and maps): deeper is refused, never a stack overflow. */
const MAX_DEPTH = 32;

/** An AnyValue as plain JSON: strings, numbers, booleans, lists and objects (bytes as base64). */
function anyValue(v: unknown, at: string, depth: number): unknown {
  if (!v || typeof v !== 'object') return null;
  if (depth > MAX_DEPTH) throw new OtlpRequestError(`${at}: values nested deeper than ${MAX_DEPTH} levels`);
  const a = v as Json;
  if ('stringValue' in a) return String(a.stringValue);
  if ('boolValue' in a) return Boolean(a.boolValue);
  if ('intValue' in a) {
    const n = Number(a.intValue);
    if (!Number.isFinite(n)) throw new OtlpRequestError(`${at}.intValue: not an integer`);
    return n;
  }
  if ('doubleValue' in a) return Number(a.doubleValue);
  if ('bytesValue' in a) return String(a.bytesValue);
  if ('arrayValue' in a)
    return list((a.arrayValue as Json)?.values, `${at}.arrayValue.values`).map((x, i) =>
      anyValue(x, `${at}[${i}]`, depth + 1),
    );
  if ('kvlistValue' in a) return attributes((a.kvlistValue as Json)?.values, `${at}.kvlistValue.values`, depth + 1);
  return null;
}

function attributes(v: unknown, at: string, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  list(v, at).forEach((kv, i) => {
    if (typeof kv.key !== 'string' || !kv.key) throw new OtlpRequestError(`${at}[${i}].key: expected a name`);
    out[kv.key] = anyValue(kv.value, `${at}[${i}].value`, depth);
  });
  return out;
}

function readSpan(s: Json, at: string, resource: Record<string, unknown>, scope: string): OtlpSpan {
  if (typeof s.name !== 'string') throw new OtlpRequestError(`${at}.name: expected a string`);
  const status = (s.status ?? {}) as Json;
  const startMs = nanosToMs(s.startTimeUnixNano, `${at}.startTimeUnixNano`);
  const endMs = nanosToMs(s.endTimeUnixNano ?? s.startTimeUnixNano, `${at}.endTimeUnixNano`);
  if (endMs < startMs) throw new OtlpRequestError(`${at}.endTimeUnixNano: before startTimeUnixNano`);
  return {
    traceId: hexId(s.traceId, 32, `${at}.traceId`, false)!,
    spanId: hexId(s.spanId, 16, `${at}.spanId`, false)!,
    parentSpanId: hexId(s.parentSpanId, 16, `${at}.parentSpanId`, true),
    name: s.name,
    kind: Number(s.kind ?? 0) || 0,
    startMs,
    endMs,
    attributes: attributes(s.attributes, `${at}.attributes`),
    events: list(s.events, `${at}.events`).map((e, i) => ({
      name: String(e.name ?? ''),
      timeMs: nanosToMs(e.timeUnixNano ?? s.startTimeUnixNano, `${at}.events[${i}].timeUnixNano`),
      attributes: attributes(e.attributes, `${at}.events[${i}].attributes`),
    })),
    status: { code: Number(status.code ?? 0) || 0, message: String(status.message ?? '') },
    resource,
    scope,
  };
}

/** The spans of an OTLP/HTTP traces request, protobuf or JSON; anything malformed is an OtlpRequestError. */
export function readTraceRequest(body: Buffer, contentType: string): OtlpSpan[] {
  let request: unknown;
  if (/^application\/x-protobuf\b/i.test(contentType)) {
    try {
      request = decodeProtobufRequest(body);
    } catch (err) {
      throw new OtlpRequestError(`not an OTLP ExportTraceServiceRequest in protobuf: ${(err as Error).message}`);
    }
  } else if (/^application\/json\b/i.test(contentType)) {
    try {
      request = JSON.parse(body.toString('utf8'));
    } catch (err) {
      throw new OtlpRequestError(`not JSON: ${(err as Error).message}`);
    }
  } else
    throw new OtlpRequestError(
      `Content-Type ${contentType || '(none)'}: send application/x-protobuf or application/json`,
    );
  if (!request || typeof request !== 'object')
    throw new OtlpRequestError('expected an ExportTraceServiceRequest object');
  const spans: OtlpSpan[] = [];
  list((request as Json).resourceSpans, 'resourceSpans').forEach((rs, i) => {
    const resource = attributes(
      (rs.resource as Json | undefined)?.attributes,
      `resourceSpans[${i}].resource.attributes`,
    );
    list(rs.scopeSpans, `resourceSpans[${i}].scopeSpans`).forEach((ss, j) => {
      const scope = String((ss.scope as Json | undefined)?.name ?? '');
      const at = `resourceSpans[${i}].scopeSpans[${j}].spans`;
      list(ss.spans, at).forEach((s, k) => spans.push(readSpan(s, `${at}[${k}]`, resource, scope)));
    });
  });
  return spans;
}
