import protobuf from 'protobufjs';

// The OTLP trace request's messages (opentelemetry-proto: collector/trace/v1, trace/v1, common/v1, resource/v1) as
// protobufjs descriptors, by their field numbers: protobufjs decodes, unknown fields are skipped as the spec says.
const field = (type: string, id: number, repeated = false) => ({ type, id, ...(repeated ? { rule: 'repeated' } : {}) });
const DESCRIPTOR = {
  nested: {
    otlp: {
      nested: {
        ExportTraceServiceRequest: { fields: { resourceSpans: field('ResourceSpans', 1, true) } },
        ResourceSpans: {
          fields: {
            resource: field('Resource', 1),
            scopeSpans: field('ScopeSpans', 2, true),
            schemaUrl: field('string', 3),
          },
        },
        Resource: { fields: { attributes: field('KeyValue', 1, true), droppedAttributesCount: field('uint32', 2) } },
        ScopeSpans: {
          fields: {
            scope: field('InstrumentationScope', 1),
            spans: field('Span', 2, true),
            schemaUrl: field('string', 3),
          },
        },
        InstrumentationScope: {
          fields: { name: field('string', 1), version: field('string', 2), attributes: field('KeyValue', 3, true) },
        },
        Span: {
          fields: {
            traceId: field('bytes', 1),
            spanId: field('bytes', 2),
            traceState: field('string', 3),
            parentSpanId: field('bytes', 4),
            name: field('string', 5),
            kind: field('int32', 6),
            startTimeUnixNano: field('fixed64', 7),
            endTimeUnixNano: field('fixed64', 8),
            attributes: field('KeyValue', 9, true),
            droppedAttributesCount: field('uint32', 10),
            events: field('Event', 11, true),
            droppedEventsCount: field('uint32', 12),
            links: field('Link', 13, true),
            droppedLinksCount: field('uint32', 14),
            status: field('Status', 15),
            flags: field('fixed32', 16),
          },
        },
        Event: {
          fields: {
            timeUnixNano: field('fixed64', 1),
            name: field('string', 2),
            attributes: field('KeyValue', 3, true),
            droppedAttributesCount: field('uint32', 4),
          },
        },
        Link: {
          fields: {
            traceId: field('bytes', 1),
            spanId: field('bytes', 2),
            traceState: field('string', 3),
            attributes: field('KeyValue', 4, true),
          },
        },
        Status: { fields: { message: field('string', 2), code: field('int32', 3) } },
        KeyValue: { fields: { key: field('string', 1), value: field('AnyValue', 2) } },
        AnyValue: {
          oneofs: {
            value: {
              oneof: ['stringValue', 'boolValue', 'intValue', 'doubleValue', 'arrayValue', 'kvlistValue', 'bytesValue'],
            },
          },
          fields: {
            stringValue: field('string', 1),
            boolValue: field('bool', 2),
            intValue: field('int64', 3),
            doubleValue: field('double', 4),
            arrayValue: field('ArrayValue', 5),
            kvlistValue: field('KeyValueList', 6),
            bytesValue: field('bytes', 7),
          },
        },
        ArrayValue: { fields: { values: field('AnyValue', 1, true) } },
        KeyValueList: { fields: { values: field('KeyValue', 1, true) } },
      },
    },
  },
};

const root = protobuf.Root.fromJSON(DESCRIPTOR);
export const ExportTraceServiceRequest = root.lookupType('otlp.ExportTraceServiceRequest');

const ID_FIELDS = ['traceId', 'spanId', 'parentSpanId'] as const;

/**
 * A protobuf request as OTLP/JSON spells it (ids in hex, 64-bit numbers as decimal strings, other bytes in base64,
 * oneofs as their one field), so that both encodings are read by one reader.
 */
export function decodeProtobufRequest(body: Uint8Array): unknown {
  const message = ExportTraceServiceRequest.decode(body);
  const request = ExportTraceServiceRequest.toObject(message, { longs: String, bytes: String, oneofs: false }) as {
    resourceSpans?: { scopeSpans?: { spans?: Record<string, unknown>[] }[] }[];
  };
  for (const rs of request.resourceSpans ?? [])
    for (const ss of rs.scopeSpans ?? [])
      for (const span of ss.spans ?? [])
        for (const key of ID_FIELDS)
          if (typeof span[key] === 'string') span[key] = Buffer.from(span[key] as string, 'base64').toString('hex');
  return request;
}
