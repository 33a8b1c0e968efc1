import { HttpTimeoutError, jsonEndpoint, postJson, type HttpResponse } from './http.js';
import { encodeObject } from './json-text.js';
import { parseCompletion } from './parse.js';
import type { CallOptions, ChatRequest, ChatResult, LlmClient } from './types.js';

export interface ClientOptions {
  /** OpenAI-compatible base URL, e.g. http://localhost:8000/v1 */
  baseUrl: string;
  apiKey?: string;
  timeoutMs: number;
  maxRetries: number;
  /** Ask for per-token logprobs and token ids; dropped for servers that reject them. */
  logprobs: boolean;
  retryBaseMs?: number;
}

export class LlmError extends Error {
  constructor(message: string, readonly status: number | null, readonly attempts: number, readonly retriable: boolean) {
    super(message);
    this.name = 'LlmError';
  }
}

const RETRIABLE_STATUS = new Set([408, 409, 425, 429, 500, 502, 503, 504]);
const RETRIABLE_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN', 'ENOTFOUND', 'UND_ERR_SOCKET']);

export function createLlmClient(opts: ClientOptions): LlmClient {
  const url = new URL(`${opts.baseUrl.replace(/\/+$/, '')}/chat/completions`);
  const endpoint = jsonEndpoint(url, opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {});
  // Learned per client: a server that rejected an extension once is not asked again.
  const caps = { logprobs: opts.logprobs, tokenIds: opts.logprobs };
  const base = opts.retryBaseMs ?? 250;

  return {
    async chat(request: ChatRequest, call: CallOptions = {}): Promise<ChatResult> {
      const started = performance.now();
      const timeoutMs = call.timeoutMs ?? opts.timeoutMs;
      const encoded = encodeObject(request as unknown as Record<string, unknown>);
      let attempts = 0;
      for (;;) {
        attempts++;
        const body = withExtensions(encoded, caps);
        let res: HttpResponse;
        try {
          res = await postJson(endpoint, body, timeoutMs, call.signal);
        } catch (err) {
          if (call.signal?.aborted) throw err;
          const code = (err as NodeJS.ErrnoException).code ?? '';
          const retriable = err instanceof HttpTimeoutError || RETRIABLE_CODES.has(code);
          if (!retriable || attempts > opts.maxRetries) throw new LlmError(`${url.origin}: ${(err as Error).message}`, null, attempts, retriable);
          await sleep(backoff(base, attempts), call.signal);
          continue;
        }
        if (res.status === 400 && dropRejectedExtension(res.body, caps)) {
          attempts--;
          continue;
        }
        if (res.status >= 200 && res.status < 300) {
          return parseCompletion(res.body, { latencyMs: performance.now() - started, attempts, model: request.model });
        }
        const retriable = RETRIABLE_STATUS.has(res.status);
        if (!retriable || attempts > opts.maxRetries) {
          throw new LlmError(`${url.origin} answered ${res.status}: ${errorText(res.body)}`, res.status, attempts, retriable);
        }
        await sleep(retryAfter(res) ?? backoff(base, attempts), call.signal);
      }
    },
  };
}

/** The request's JSON with the extensions still asked for appended (ChatRequest has no such keys). */
function withExtensions(encoded: string, caps: { logprobs: boolean; tokenIds: boolean }): string {
  if (!caps.logprobs && !caps.tokenIds) return encoded;
  return `${encoded.slice(0, -1)}${caps.logprobs ? ',"logprobs":true' : ''}${caps.tokenIds ? ',"return_token_ids":true' : ''}}`;
}

function dropRejectedExtension(body: string, caps: { logprobs: boolean; tokenIds: boolean }): boolean {
  if (caps.tokenIds && body.includes('return_token_ids')) {
    caps.tokenIds = false;
    return true;
  }
  if (caps.logprobs && body.includes('logprobs')) {
    caps.logprobs = false;
    return true;
  }
  return false;
}

function backoff(base: number, attempt: number): number {
  const exp = Math.min(10_000, base * 2 ** (attempt - 1));
  return exp / 2 + Math.random() * (exp / 2);
}

function retryAfter(res: HttpResponse): number | undefined {
  const value = Number(res.headers['retry-after']);
  return Number.isFinite(value) && value >= 0 ? Math.min(30_000, value * 1000) : undefined;
}

function errorText(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: string } | string; message?: string };
    const e = parsed.error;
    return (typeof e === 'string' ? e : e?.message) ?? parsed.message ?? body.slice(0, 300);
  } catch {
    return body.slice(0, 300);
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason ?? new Error('aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
