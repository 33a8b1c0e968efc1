import type http from 'node:http';
import zlib from 'node:zlib';
import { StoreBusyError } from '../store/index.js';
import { ingestSpans } from '../telemetry/otlp-ingest.js';
import { OtlpRequestError, readTraceRequest } from '../telemetry/otlp-read.js';
import { readBodyBytes } from '../util/http-body.js';
import { ApiError, badRequest } from './api-error.js';
import type { RouteContext } from './context.js';

/** The body as sent: gzip or deflate undone, never to more than the body limit (a small bomb stays small). */
function decoded(body: Buffer, encoding: string | undefined, maxBytes: number): Buffer {
  const e = (encoding ?? 'identity').toLowerCase();
  if (e === 'identity') return body;
  const options = { maxOutputLength: maxBytes };
  try {
    if (e === 'gzip') return zlib.gunzipSync(body, options);
    if (e === 'deflate') return zlib.inflateSync(body, options);
  } catch (err) {
    const big = (err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE';
    if (big) throw new ApiError(413, `the request body unpacks to over ${maxBytes} bytes`, null, 'body_too_large');
    throw badRequest(`Content-Encoding ${e}: ${(err as Error).message}`, null, 'bad_encoding');
  }
  throw new ApiError(415, `Content-Encoding ${e}: send gzip, deflate or none`, null, 'unsupported_encoding');
}

/**
 * POST /v1/traces, an OTLP/HTTP traces receiver: any instrumented agent's GenAI spans (protobuf or JSON) become
 * rollouts of captured traffic, one per session (telemetry/otlp-ingest.ts). A malformed request is a 400 that names
 * the field and stores nothing; the answer is an empty ExportTraceServiceResponse in the request's encoding.
 */
export async function otlpTraces(
  ctx: RouteContext,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  const type = String(req.headers['content-type'] ?? '');
  const json = /^application\/json\b/i.test(type);
  if (!json && !/^application\/x-protobuf\b/i.test(type))
    throw new ApiError(415, `Content-Type ${type || '(none)'}: send application/x-protobuf or application/json`);
  const max = ctx.limits.max_body_bytes;
  const body = decoded(await readBodyBytes(req, max), req.headers['content-encoding'], max);
  try {
    await ingestSpans(ctx.store, readTraceRequest(body, type));
  } catch (err) {
    if (err instanceof OtlpRequestError) throw badRequest(err.message, null, 'invalid_otlp');
    if (err instanceof StoreBusyError) throw new ApiError(503, err.message, null, 'store_busy');
    throw err;
  }
  const answer = json ? '{}' : '';
  res.writeHead(200, {
    'content-type': json ? 'application/json' : 'application/x-protobuf',
    'content-length': answer.length,
  });
  res.end(answer);
}
