import type net from 'node:net';
import { hangUp, poolFor, type ConnectionPool, type ConnectionUser } from './http-pool.js';
import { ResponseParser, type BodyFlow, type BodySink, type ParsedResponse } from './http-response.js';

export type { BodyFlow, BodySink } from './http-response.js';

export interface HttpResponse {
  status: number;
  /** Lower-case names. */
  headers: ReadonlyMap<string, string>;
  body: string;
}

export class HttpTimeoutError extends Error {
  constructor(ms: number) {
    super(`request timed out after ${ms} ms`);
    this.name = 'HttpTimeoutError';
  }
}

/** A URL to POST JSON to, resolved once: its connection pool and the request head up to Content-Length. */
export interface JsonEndpoint {
  url: URL;
  pool: ConnectionPool;
  head: string;
  /** How long an aborted request's connection may wait for the rest of its response (ABORT_GRACE_MS). */
  abortGraceMs: number;
}

/** The endpoint at `route` (e.g. `chat/completions`) of one base URL or of each replica's, with the API key as a bearer token. */
export function endpointsOf(baseUrl: string | readonly string[], route: string, apiKey?: string): JsonEndpoint[] {
  const headers: Record<string, string> = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
  const urls = typeof baseUrl === 'string' ? [baseUrl] : baseUrl;
  return urls.map((u) => jsonEndpoint(new URL(`${u.replace(/\/+$/, '')}/${route}`), headers));
}

/** How long an aborted request's connection may wait for the rest of a response before it is closed. */
export const ABORT_GRACE_MS = 5;

const INVALID_HEADER_CHAR = /[^\t\x20-\x7e\x80-\xff]/;

export function jsonEndpoint(
  url: URL,
  headers: Record<string, string> = {},
  abortGraceMs = ABORT_GRACE_MS,
): JsonEndpoint {
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new TypeError(`unsupported protocol ${url.protocol} in ${url.origin}`);
  const secure = url.protocol === 'https:';
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const all: Record<string, string> = { host: url.host, 'content-type': 'application/json', ...headers };
  if (url.username && !Object.keys(headers).some((k) => k.toLowerCase() === 'authorization')) {
    all.authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
  }
  const lines = Object.entries(all).map(([name, value]) => {
    if (INVALID_HEADER_CHAR.test(name) || INVALID_HEADER_CHAR.test(value))
      throw new TypeError(`invalid character in HTTP header ${name}`);
    return `${name}: ${value}\r\n`;
  });
  return {
    url,
    pool: poolFor({ secure, host, port: Number(url.port) || (secure ? 443 : 80) }),
    head: `POST ${url.pathname}${url.search} HTTP/1.1\r\n${lines.join('')}connection: keep-alive\r\n`,
    abortGraceMs,
  };
}

/**
 * POSTs JSON over a kept-alive connection (a small HTTP/1.1 client: node:http's streams and agent cost
 * more CPU than a fast local server's whole reply). Rejects on network errors, timeout or abort. A request
 * that does not complete closes its connection: over HTTP/1.1 that is how the server learns to stop. An
 * aborted request rejects at once, but its connection is closed only if the response has not finished
 * arriving within ABORT_GRACE_MS: a reply already on the wire (a fast server) keeps the connection.
 * A sink that takes the body (a stream) gets its bytes as they arrive, until the request settles; the
 * promise then resolves once the body is complete, and timeoutMs bounds the whole stream.
 */
export function postJson(
  endpoint: JsonEndpoint,
  body: string,
  timeoutMs: number,
  signal?: AbortSignal,
  sink?: BodySink,
): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
    const request = `${endpoint.head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    new Exchange(endpoint, request, timeoutMs, signal, sink, resolve, reject);
  });
}

/** The connection closed after the response began but before its framing said it was complete. */
function endedEarly(): Error {
  return Object.assign(new Error('the response ended early (the connection closed before the whole body arrived)'), {
    code: 'ECONNRESET',
  });
}

function onTimeout(exchange: Exchange, ms: number): void {
  exchange.fail(new HttpTimeoutError(ms));
}

function onGraceOver(exchange: Exchange): void {
  exchange.close();
}

/** One request and its response on a pooled connection; also the abort listener of its signal. */
class Exchange implements ConnectionUser, BodyFlow {
  private socket: net.Socket | undefined = undefined;
  private settled = false;
  /** Aborted after sending: the response is read to the end (to keep the connection) or the grace runs out. */
  private draining = false;
  private readonly parser: ResponseParser;
  private timer: NodeJS.Timeout;

  constructor(
    private readonly endpoint: JsonEndpoint,
    private readonly request: string,
    timeoutMs: number,
    private readonly signal: AbortSignal | undefined,
    sink: BodySink | undefined,
    private readonly resolve: (res: HttpResponse) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    this.parser = new ResponseParser(sink && ((status, headers) => this.guarded(sink(status, headers, this))));
    this.timer = setTimeout(onTimeout, timeoutMs, this, timeoutMs);
    signal?.addEventListener('abort', this, { once: true });
    endpoint.pool.acquire(this);
  }

  handleEvent(): void {
    const reason = this.signal!.reason ?? new Error('aborted');
    if (!this.socket) return this.fail(reason);
    this.finish();
    this.draining = true;
    this.timer = setTimeout(onGraceOver, this.endpoint.abortGraceMs, this);
    this.reject(reason);
  }

  pause(): void {
    if (!this.settled) this.socket?.pause();
  }

  resume(): void {
    if (!this.settled) this.socket?.resume();
  }

  send(socket: net.Socket): void {
    this.socket = socket;
    socket.write(this.request);
  }

  data(chunk: Buffer): void {
    let res: ParsedResponse | null;
    try {
      res = this.parser.push(chunk);
    } catch (err) {
      return this.fail(err);
    }
    if (res) this.succeed(res);
  }

  end(): void {
    const res = this.parser.end();
    if (res) this.succeed(res);
    else this.fail(this.parser.started ? endedEarly() : hangUp());
  }

  fail(err: unknown): void {
    if (this.draining) return this.close();
    if (this.settled) return;
    this.finish();
    this.close();
    this.reject(err);
  }

  /** Gives the connection up for good (the server sees it close). */
  close(): void {
    this.draining = false;
    clearTimeout(this.timer);
    if (this.socket) {
      this.endpoint.pool.detach(this.socket);
      this.socket.destroy();
    }
  }

  private succeed(res: ParsedResponse): void {
    const aborted = this.draining;
    this.draining = false;
    this.finish();
    if (!res.keepAlive) this.close();
    else this.endpoint.pool.release(this.socket!);
    if (!aborted) this.resolve({ status: res.status, headers: res.headers, body: res.body });
  }

  /** A stream's bytes stop at the request's end: an aborted one's rest is drained, not handed on. */
  private guarded(to: ((bytes: Buffer) => void) | undefined): ((bytes: Buffer) => void) | undefined {
    return (
      to
      && ((bytes) => {
        if (!this.settled) to(bytes);
      })
    );
  }

  private finish(): void {
    this.settled = true;
    // a kept connection goes back to the pool flowing, whatever the sink asked
    if (this.socket?.isPaused()) this.socket.resume();
    clearTimeout(this.timer);
    this.signal?.removeEventListener('abort', this);
    if (!this.socket) this.endpoint.pool.withdraw(this);
  }
}
