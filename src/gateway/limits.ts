import type http from 'node:http';
import type net from 'node:net';
import type { RLConfig } from '../config/schema.js';
import { ApiError } from './api-error.js';

export type GatewayLimits = Pick<
  RLConfig['gateway'],
  | 'max_body_bytes'
  | 'max_header_bytes'
  | 'max_headers'
  | 'max_connections'
  | 'max_connections_per_client'
  | 'request_timeout_s'
  | 'write_timeout_s'
>;

/** node:http's own limits, from the config: header bytes, and the time a request may take to arrive. */
export function serverOptions(limits: GatewayLimits): http.ServerOptions {
  const requestMs = limits.request_timeout_s * 1000;
  return {
    maxHeaderSize: limits.max_header_bytes,
    requestTimeout: requestMs,
    headersTimeout: requestMs,
    // how often node checks those timeouts (its default, 30 s, would let a 1 s limit run 30)
    connectionsCheckingInterval: Math.min(1000, requestMs),
  };
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  413: 'Payload Too Large',
  431: 'Request Header Fields Too Large',
  503: 'Service Unavailable',
};

/** An answer written on the socket itself, for what never became a request node:http hands on. */
function answerRaw(socket: net.Socket, err: ApiError): void {
  if (socket.destroyed || !socket.writable) return void socket.destroy();
  const body = err.body();
  const retry = err.status === 503 || err.status === 429 ? 'retry-after: 1\r\n' : '';
  socket.end(
    `HTTP/1.1 ${err.status} ${REASONS[err.status] ?? 'Error'}\r\ncontent-type: application/json\r\n`
      + `content-length: ${Buffer.byteLength(body)}\r\n${retry}connection: close\r\n\r\n${body}`,
  );
  // a client that never closes its side does not hold the socket
  setTimeout(() => socket.destroy(), 1000).unref();
}

/** What node:http could not parse, or did not get in time, answered in OpenAI's shape and closed. */
function clientError(err: NodeJS.ErrnoException, socket: net.Socket): void {
  const code = err.code ?? '';
  if (
    code === 'ECONNRESET'
    || ((err as { bytesParsed?: number }).bytesParsed === 0 && code === 'HPE_INVALID_EOF_STATE')
  ) {
    return void socket.destroy();
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return answerRaw(
      socket,
      new ApiError(408, 'the request did not arrive within gateway.request_timeout_s', null, 'request_timeout'),
    );
  }
  if (code === 'HPE_HEADER_OVERFLOW') {
    return answerRaw(
      socket,
      new ApiError(431, 'the request headers are over gateway.max_header_bytes', null, 'headers_too_large'),
    );
  }
  answerRaw(socket, new ApiError(400, `malformed HTTP request (${code || err.message})`, null, 'malformed_request'));
}

/**
 * Connections past gateway.max_connections (or max_connections_per_client from one address) are answered
 * 503 and closed before a request is read; a client that stops reading its response for write_timeout_s
 * is disconnected (a stream relay then holds its backend back instead of buffering). Returns a stop().
 */
export function guardConnections(
  server: http.Server,
  limits: GatewayLimits,
): { refused: WeakSet<net.Socket>; stop(): void } {
  const refused = new WeakSet<net.Socket>();
  const open = new Set<net.Socket>();
  const perClient = new Map<string, number>();
  const progress = new WeakMap<net.Socket, { sent: number; since: number }>();
  server.on('clientError', (err: NodeJS.ErrnoException, socket: net.Socket) => {
    if (refused.has(socket)) return void socket.destroy();
    clientError(err, socket);
  });
  server.on('connection', (socket: net.Socket) => {
    const client = socket.remoteAddress ?? '';
    const mine = perClient.get(client) ?? 0;
    // the gateway full is a 503 (try later); one client past its share, a 429 (its own doing)
    const full =
      open.size >= limits.max_connections
        ? new ApiError(
            503,
            `the gateway has ${limits.max_connections} connections open (gateway.max_connections)`,
            null,
            'too_many_connections',
          )
        : mine >= limits.max_connections_per_client
          ? new ApiError(
              429,
              `${client} has ${limits.max_connections_per_client} connections open `
                + '(gateway.max_connections_per_client)',
              null,
              'too_many_connections',
              'rate_limit_error',
            )
          : undefined;
    if (full) {
      refused.add(socket);
      return answerRaw(socket, full);
    }
    open.add(socket);
    perClient.set(client, mine + 1);
    socket.once('close', () => {
      open.delete(socket);
      const left = (perClient.get(client) ?? 1) - 1;
      if (left) perClient.set(client, left);
      else perClient.delete(client);
    });
  });
  const writeMs = limits.write_timeout_s * 1000;
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const socket of open) {
        const pending = socket.writableLength;
        if (!pending) {
          progress.delete(socket);
          continue;
        }
        const sent = socket.bytesWritten - pending;
        const last = progress.get(socket);
        if (!last || last.sent !== sent) progress.set(socket, { sent, since: now });
        else if (now - last.since >= writeMs) socket.destroy();
      }
    },
    Math.min(1000, writeMs / 4),
  );
  sweep.unref();
  return { refused, stop: () => clearInterval(sweep) };
}
