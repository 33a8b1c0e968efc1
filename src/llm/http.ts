import type net from 'node:net';
import { poolFor, type ConnectionPool } from './http-pool.js';
import { ResponseParser, type ParsedResponse } from './http-response.js';

export interface HttpResponse {
  status: number;
  /** Lower-case names. */
  headers: Record<string, string>;
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
}

const INVALID_HEADER_CHAR = /[^\t\x20-\x7e\x80-\xff]/;

export function jsonEndpoint(url: URL, headers: Record<string, string> = {}): JsonEndpoint {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`unsupported protocol ${url.protocol} in ${url.origin}`);
  const secure = url.protocol === 'https:';
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const all: Record<string, string> = { host: url.host, 'content-type': 'application/json', ...headers };
  if (url.username && !Object.keys(headers).some((k) => k.toLowerCase() === 'authorization')) {
    all.authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
  }
  const lines = Object.entries(all).map(([name, value]) => {
    if (INVALID_HEADER_CHAR.test(name) || INVALID_HEADER_CHAR.test(value)) throw new TypeError(`invalid character in HTTP header ${name}`);
    return `${name}: ${value}\r\n`;
  });
  return {
    url,
    pool: poolFor({ secure, host, port: Number(url.port) || (secure ? 443 : 80) }),
    head: `POST ${url.pathname}${url.search} HTTP/1.1\r\n${lines.join('')}connection: keep-alive\r\n`,
  };
}

function hangUp(): Error {
  return Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
}

/**
 * POSTs JSON over a kept-alive connection (a small HTTP/1.1 client: node:http's streams and agent cost
 * more CPU than a fast local server's whole reply). Rejects on network errors, timeout or abort. A request
 * that does not complete closes its connection: over HTTP/1.1 that is how the server learns to stop.
 */
export function postJson(endpoint: JsonEndpoint, body: string, timeoutMs: number, signal?: AbortSignal): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
    const request = `${endpoint.head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const parser = new ResponseParser();
    let socket: net.Socket | undefined;
    let settled = false;
    let withdraw = () => {};
    const finish = () => {
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      withdraw();
      socket?.off('data', onData).off('end', onEnd).off('close', onClose).off('error', fail);
    };
    const fail = (err: unknown) => {
      if (settled) return;
      finish();
      socket?.destroy();
      reject(err);
    };
    const succeed = (res: ParsedResponse) => {
      finish();
      if (res.keepAlive) endpoint.pool.release(socket!);
      else socket!.destroy();
      resolve({ status: res.status, headers: res.headers, body: res.body });
    };
    const onData = (chunk: Buffer) => {
      let res: ParsedResponse | null;
      try {
        res = parser.push(chunk);
      } catch (err) {
        return fail(err);
      }
      if (res) succeed(res);
    };
    const onEnd = () => {
      const res = parser.end();
      if (res) succeed(res);
      else fail(hangUp());
    };
    const onClose = () => fail(hangUp());
    const onAbort = () => fail(signal!.reason ?? new Error('aborted'));
    const timer = setTimeout(() => fail(new HttpTimeoutError(timeoutMs)), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    withdraw = endpoint.pool.acquire((s) => {
      socket = s;
      s.on('data', onData).on('end', onEnd).on('close', onClose).on('error', fail);
      s.write(request);
    });
  });
}
