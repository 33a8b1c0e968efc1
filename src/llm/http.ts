import http from 'node:http';
import https from 'node:https';

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const agents = { http: new http.Agent({ keepAlive: true, maxSockets: 256 }), https: new https.Agent({ keepAlive: true, maxSockets: 256 }) };

export class HttpTimeoutError extends Error {
  constructor(ms: number) {
    super(`request timed out after ${ms} ms`);
    this.name = 'HttpTimeoutError';
  }
}

/** A URL to POST JSON to, resolved once: request options and the constant headers (Host included). */
export interface JsonEndpoint {
  url: URL;
  secure: boolean;
  options: http.RequestOptions;
  headers: readonly string[];
}

export function jsonEndpoint(url: URL, headers: Record<string, string> = {}): JsonEndpoint {
  const secure = url.protocol === 'https:';
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return {
    url,
    secure,
    options: { method: 'POST', host, port: url.port || (secure ? 443 : 80), path: `${url.pathname}${url.search}`, agent: secure ? agents.https : agents.http },
    // url.host omits a default port, as a Host header should.
    headers: ['content-type', 'application/json', ...Object.entries(headers).flat(), 'host', url.host],
  };
}

/**
 * POSTs JSON over a keep-alive connection; rejects on network errors, timeout or abort. An aborted
 * request closes its socket: over HTTP/1.1 that is the only way the server learns it may stop.
 */
export function postJson(endpoint: JsonEndpoint, body: string, timeoutMs: number, signal?: AbortSignal): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
    // Headers as a flat array are written as they are, without per-header bookkeeping.
    const headers = [...endpoint.headers, 'content-length', String(Buffer.byteLength(body))];
    const req = (endpoint.secure ? https : http).request({ ...endpoint.options, headers });
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      reject(err);
    };
    const timer = setTimeout(() => {
      fail(new HttpTimeoutError(timeoutMs));
      req.destroy();
    }, timeoutMs);
    // Settle first, then destroy without an error: the stream machinery would format an error's stack.
    const onAbort = () => {
      fail(signal?.reason ?? new Error('aborted'));
      req.destroy();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', fail);
    });
    req.on('error', fail);
    req.end(body);
  });
}
