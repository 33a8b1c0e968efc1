import type http from 'node:http';

/** An error the gateway answers with, in OpenAI's shape: `{"error": {message, type, param, code}}`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly type = status >= 500 ? 'api_error' : 'invalid_request_error',
  ) {
    super(message);
    this.name = 'ApiError';
  }

  body(): string {
    return JSON.stringify({ error: { message: this.message, type: this.type, param: this.param, code: this.code } });
  }
}

export function badRequest(message: string, param: string | null, code: string | null = null): ApiError {
  return new ApiError(400, message, param, code);
}

/** Sends a JSON body (unless the response has begun: then the connection is closed). */
export function sendJson(
  res: http.ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

export function sendError(res: http.ServerResponse, err: ApiError): void {
  const headers: Record<string, string> = {};
  if (err.status === 401) headers['www-authenticate'] = 'Bearer';
  // a body past the limit is not read: the connection cannot carry another request
  if (err.status === 413) headers.connection = 'close';
  sendJson(res, err.status, err.body(), headers);
}
