import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readTraceRequest, type OtlpSpan } from '../../src/telemetry/otlp-read.js';

export interface OtlpReceiver {
  url: string;
  /** Each accepted request's content type and decoded spans, in order. */
  requests: { contentType: string; spans: OtlpSpan[] }[];
  /** Every span accepted, by span id (a span sent again replaces itself). */
  spans: Map<string, OtlpSpan>;
  /** Answer the next requests with these statuses (then 200 again). */
  failNext(...statuses: number[]): void;
  close(): Promise<void>;
}

/** A test double of an OTLP/HTTP collector: decodes what it gets with the project's reader and keeps the spans. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const requests: OtlpReceiver['requests'] = [];
  const spans = new Map<string, OtlpSpan>();
  const failures: number[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const status = failures.shift();
      if (status) {
        res.writeHead(status, { 'content-type': 'text/plain' }).end(`refused with ${status}`);
        return;
      }
      const contentType = req.headers['content-type'] ?? '';
      const got = readTraceRequest(Buffer.concat(chunks), contentType);
      requests.push({ contentType, spans: got });
      for (const s of got) spans.set(s.spanId, s);
      const json = contentType.startsWith('application/json');
      res
        .writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' })
        .end(json ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    requests,
    spans,
    failNext: (...statuses) => failures.push(...statuses),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
