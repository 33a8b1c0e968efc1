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

/** POSTs JSON over a keep-alive connection; rejects on network errors, timeout or abort (the socket is closed). */
export function postJson(url: URL, body: string, headers: Record<string, string>, timeoutMs: number, signal?: AbortSignal): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
    const secure = url.protocol === 'https:';
    const req = (secure ? https : http).request(url, {
      method: 'POST',
      agent: secure ? agents.https : agents.http,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers },
    });
    const timer = setTimeout(() => req.destroy(new HttpTimeoutError(timeoutMs)), timeoutMs);
    const onAbort = () => req.destroy(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        done();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', (err) => {
        done();
        reject(err);
      });
    });
    req.on('error', (err) => {
      done();
      reject(err);
    });
    req.end(body);
  });
}
