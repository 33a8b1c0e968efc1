import { HttpTimeoutError, jsonEndpoint, postJson, type HttpResponse, type JsonEndpoint } from './http.js';
import { BoundedCache } from '../util/bounded-cache.js';
import { encodeObject } from './json-text.js';
import { parseCompletion, TruncatedResponseError } from './parse.js';
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

const clients = new BoundedCache<string, HttpLlmClient>(64);

/**
 * The client for these options: one per distinct options in a process (runs one after another in a
 * process share it, with what it learned about the server; V8's optimized code for it survives them).
 */
export function createLlmClient(opts: ClientOptions): LlmClient {
  const key = JSON.stringify([opts.baseUrl, opts.apiKey, opts.timeoutMs, opts.maxRetries, opts.logprobs, opts.retryBaseMs]);
  return clients.get(key, () => new HttpLlmClient(opts));
}

// A class, not a closure per client: hot call sites then see one `chat` function for every client, and
// V8's optimized code for them survives the clients of a finished run.
class HttpLlmClient implements LlmClient {
  private readonly url: URL;
  private readonly endpoint: JsonEndpoint;
  /** Learned per client: a server that rejected an extension once is not asked again. */
  private readonly caps: { logprobs: boolean; tokenIds: boolean };
  private readonly retryBaseMs: number;

  constructor(private readonly opts: ClientOptions) {
    this.url = new URL(`${opts.baseUrl.replace(/\/+$/, '')}/chat/completions`);
    this.endpoint = jsonEndpoint(this.url, opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {});
    this.caps = { logprobs: opts.logprobs, tokenIds: opts.logprobs };
    this.retryBaseMs = opts.retryBaseMs ?? 250;
  }

  async chat(request: ChatRequest, call: CallOptions = {}): Promise<ChatResult> {
    const started = performance.now();
    const timeoutMs = call.timeoutMs ?? this.opts.timeoutMs;
    const encoded = encodeObject(request as unknown as Record<string, unknown>);
    let attempts = 0;
    for (;;) {
      attempts++;
      let res: HttpResponse;
      try {
        res = await postJson(this.endpoint, withExtensions(encoded, this.caps), timeoutMs, call.signal);
      } catch (err) {
        await this.retryAfterFailure(err, attempts, call.signal);
        continue;
      }
      if (res.status >= 200 && res.status < 300) {
        try {
          return parseCompletion(res.body, { latencyMs: performance.now() - started, attempts, model: request.model });
        } catch (err) {
          // Retried like the connection reset it is; a complete JSON body of the wrong shape is not.
          if (!(err instanceof TruncatedResponseError)) throw err;
          await this.retryAfterFailure(err, attempts, call.signal);
          continue;
        }
      }
      if (res.status === 400 && dropRejectedExtension(res.body, this.caps)) {
        attempts--;
        continue;
      }
      await this.retryAfterStatus(res, attempts, call.signal);
    }
  }

  /** Waits before the next attempt after a network error or timeout, or throws when there is none. */
  private async retryAfterFailure(err: unknown, attempts: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? '';
    const retriable = err instanceof HttpTimeoutError || RETRIABLE_CODES.has(code);
    if (!retriable || attempts > this.opts.maxRetries) throw new LlmError(`${this.url.origin}: ${(err as Error).message}`, null, attempts, retriable);
    await sleep(backoff(this.retryBaseMs, attempts), signal);
  }

  /** Waits before the next attempt after an error status, or throws when there is none. */
  private async retryAfterStatus(res: HttpResponse, attempts: number, signal?: AbortSignal): Promise<void> {
    const retriable = RETRIABLE_STATUS.has(res.status);
    if (!retriable || attempts > this.opts.maxRetries) {
      throw new LlmError(`${this.url.origin} answered ${res.status}: ${errorText(res.body)}`, res.status, attempts, retriable);
    }
    await sleep(retryAfter(res) ?? backoff(this.retryBaseMs, attempts), signal);
  }
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
  const value = Number(res.headers.get('retry-after'));
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
