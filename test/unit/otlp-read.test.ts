import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OtlpRequestError, readTraceRequest } from '../../src/telemetry/otlp-read.js';
import { ExportTraceServiceRequest } from '../../src/telemetry/otlp-wire.js';

const kv = (key: string, value: object) => ({ key, value });
const REQUEST = {
  resourceSpans: [
    {
      resource: { attributes: [kv('service.name', { stringValue: 'bot' })] },
      scopeSpans: [
        {
          scope: { name: 'scope' },
          spans: [
            {
              traceId: Buffer.from('0af7651916cd43dd8448eb211c80319c', 'hex'),
              spanId: Buffer.from('b7ad6b7169203331', 'hex'),
              parentSpanId: Buffer.from('00f067aa0ba902b7', 'hex'),
              name: 'chat',
              kind: 3,
              startTimeUnixNano: 1_700_000_000_000_000_000n.toString(),
              endTimeUnixNano: 1_700_000_000_250_000_000n.toString(),
              attributes: [
                kv('llm.token_count.prompt', { intValue: 12 }),
                kv('x.ratio', { doubleValue: 0.5 }),
                kv('x.flag', { boolValue: true }),
                kv('x.list', { arrayValue: { values: [{ stringValue: 'a' }, { intValue: 2 }] } }),
                kv('x.map', { kvlistValue: { values: [kv('k', { stringValue: 'v' })] } }),
              ],
              events: [{ timeUnixNano: 1_700_000_000_100_000_000n.toString(), name: 'e', attributes: [] }],
              status: { code: 2, message: 'boom' },
            },
          ],
        },
      ],
    },
  ],
};
const PROTOBUF = Buffer.from(ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject(REQUEST)).finish());

describe('reading an OTLP traces request', () => {
  it('reads protobuf: hex ids, times in ms, every attribute type, events and status', () => {
    const [s] = readTraceRequest(PROTOBUF, 'application/x-protobuf');
    expect(s).toEqual({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      parentSpanId: '00f067aa0ba902b7',
      name: 'chat',
      kind: 3,
      startMs: 1_700_000_000_000,
      endMs: 1_700_000_000_250,
      attributes: {
        'llm.token_count.prompt': 12,
        'x.ratio': 0.5,
        'x.flag': true,
        'x.list': ['a', 2],
        'x.map': { k: 'v' },
      },
      events: [{ name: 'e', timeMs: 1_700_000_000_100, attributes: {} }],
      status: { code: 2, message: 'boom' },
      resource: { 'service.name': 'bot' },
      scope: 'scope',
    });
  });

  it('reads the same request as OTLP/JSON (hex ids, int64 as strings)', () => {
    const json = JSON.parse(
      JSON.stringify(REQUEST, (k, v) =>
        ['traceId', 'spanId', 'parentSpanId'].includes(k) ? Buffer.from(v.data).toString('hex') : v,
      ),
    );
    expect(readTraceRequest(Buffer.from(JSON.stringify(json)), 'application/json; charset=utf-8')).toEqual(
      readTraceRequest(PROTOBUF, 'application/x-protobuf'),
    );
  });

  it('names what is wrong', () => {
    const bad = (mutate: (span: Record<string, unknown>) => void) => {
      const r = structuredClone(REQUEST) as unknown as {
        resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[];
      };
      const span = r.resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
      for (const k of ['traceId', 'spanId', 'parentSpanId']) span[k] = Buffer.from(span[k] as Buffer).toString('hex');
      mutate(span);
      return () => readTraceRequest(Buffer.from(JSON.stringify(r)), 'application/json');
    };
    const at = 'resourceSpans[0].scopeSpans[0].spans[0]';
    expect(bad((s) => (s.traceId = '00000000000000000000000000000000'))).toThrow(
      `${at}.traceId: expected 32 hex digits, not all zero`,
    );
    expect(bad((s) => (s.startTimeUnixNano = '-5'))).toThrow(`${at}.startTimeUnixNano: expected nanoseconds`);
    expect(bad((s) => (s.endTimeUnixNano = '5'))).toThrow(`${at}.endTimeUnixNano: before startTimeUnixNano`);
    expect(bad((s) => (s.attributes = 'x'))).toThrow(`${at}.attributes: expected a list`);
    expect(bad((s) => (s.name = 7))).toThrow(`${at}.name: expected a string`);
    expect(() => readTraceRequest(Buffer.from('{}'), 'text/plain')).toThrow(/Content-Type text\/plain/);
    expect(() => readTraceRequest(Buffer.from('{'), 'application/json')).toThrow(/not JSON/);
  });

  it('any byte mutation of a protobuf request is read or refused as a request error, never another error', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(PROTOBUF.length - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
        fc.nat(PROTOBUF.length),
        (flips, cut) => {
          const body = Buffer.from(PROTOBUF.subarray(0, Math.max(1, cut)));
          for (const [i, byte] of flips) if (i < body.length) body[i] = byte;
          try {
            readTraceRequest(body, 'application/x-protobuf');
          } catch (err) {
            expect(err).toBeInstanceOf(OtlpRequestError);
          }
        },
      ),
      { seed: 46, numRuns: 2000 },
    );
  });

  it('deeply nested values are refused, not a stack overflow', () => {
    const deep = `${'{"arrayValue":{"values":['.repeat(20_000)}{"stringValue":"x"}${']}}'.repeat(20_000)}`;
    const text = `{"resourceSpans":[{"resource":{"attributes":[{"key":"deep","value":${deep}}]},"scopeSpans":[]}]}`;
    expect(() => readTraceRequest(Buffer.from(text), 'application/json')).toThrow(/nested deeper than 32 levels/);
  });
});
