import { BoundedCache } from '../util/bounded-cache.js';
import { llmRequestEnded, llmRequestStarted } from '../util/profile-counters.js';
import { CompletionStream } from './completion-stream.js';
import { endpointsOf, HttpTimeoutError, postJson, type HttpResponse, type JsonEndpoint } from './http.js';
import { encodeObject } from './json-text.js';
import { parseCompletion, TruncatedResponseError } from './parse.js';
import { Replicas, type Lease } from './replicas.js';
import type { CallOptions, ChatRequest, ChatResult, LlmClient } from './types.js';

export interface ClientOptions {
  /** OpenAI-compatible base URL, e.g. http://localhost:8000/v1; or the base URLs of replicas serving the same model. */
  baseUrl: string | readonly string[];
  apiKey?: string;
  timeoutMs: number;
  maxRetries: number;
  /** Ask for per-token logprobs and token ids; dropped for servers that reject them. */
  logprobs: boolean;
  /** Stream completions (server-sent events; measures time to first token); dropped for servers that reject it. */
  stream?: boolean;
  retryBaseMs?: number;
}

export class LlmError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    readonly attempts: number,
    readonly retriable: boolean,
  ) {
    super(message);
    this.name = 'LlmError';
  }
}

const RETRIABLE_STATUS = new Set([408, 409, 425, 429, 500, 502, 503, 504]);
const RETRIABLE_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENOTFOUND',
  'UND_ERR_SOCKET',
]);
const MAX_BACKOFF_MS = 10_000;

const clients = new BoundedCache<string, HttpLlmClient>(64);

/**
 * The client for these options: one per distinct options in a process (runs one after another in a
 * process share it, with what it learned about the server; V8's optimized code for it survives them).
 */
export function createLlmClient(opts: ClientOptions): LlmClient {
  const { baseUrl, apiKey, timeoutMs, maxRetries, logprobs, stream, retryBaseMs } = opts;
  const key = JSON.stringify([baseUrl, apiKey, timeoutMs, maxRetries, logprobs, stream, retryBaseMs]);
  return clients.get(key, () => new HttpLlmClient(opts));
}

// A class, not a closure per client: hot call sites then see one `chat` function for every client, and
// V8's optimized code for them survives the clients of a finished run.
class HttpLlmClient implements LlmClient {
  /** The chat endpoint of each replica (one for a single base URL), shared by the client's requests. */
  private readonly replicas: Replicas<JsonEndpoint>;
  /** Learned per client: a server that rejected an extension (or streaming) once is not asked again. */
  private readonly caps: Caps;
  private readonly retryBaseMs: number;

  constructor(private readonly opts: ClientOptions) {
    const endpoints = endpointsOf(opts.baseUrl, 'chat/completions', opts.apiKey);
    this.caps = { logprobs: opts.logprobs, tokenIds: opts.logprobs, stream: opts.stream ?? false };
    this.retryBaseMs = opts.retryBaseMs ?? 250;
    this.replicas = new Replicas(endpoints, { baseBackoffMs: this.retryBaseMs, maxBackoffMs: MAX_BACKOFF_MS });
  }

  async chat(request: ChatRequest, call: CallOptions = {}): Promise<ChatResult> {
    llmRequestStarted();
    let result: ChatResult | undefined;
    try {
      return (result = await this.send(request, call));
    } finally {
      llmRequestEnded(result?.usage);
    }
  }

  private async send(request: ChatRequest, call: CallOptions): Promise<ChatResult> {
    const started = performance.now();
    const timeoutMs = call.timeoutMs ?? this.opts.timeoutMs;
    const encoded = encodeObject(request as unknown as Record<string, unknown>);
    let attempts = 0;
    let waitedMs = 0;
    for (;;) {
      const pick = this.replicas.acquire();
      if ('waitMs' in pick) {
        // Every replica is down: wait for the first to come back, within the request's timeout.
        if (waitedMs + pick.waitMs > timeoutMs) {
          throw new LlmError(
            `${this.downText()} for ${Math.ceil(pick.waitMs)} ms more, beyond the request's timeout of ${timeoutMs} ms`,
            null,
            attempts,
            true,
          );
        }
        await sleep(pick.waitMs, call.signal);
        waitedMs += pick.waitMs;
        continue;
      }
      const { lease } = pick;
      attempts++;
      let res: HttpResponse;
      const stream = this.caps.stream ? new CompletionStream() : undefined;
      try {
        res = await postJson(lease.item, withExtensions(encoded, this.caps), timeoutMs, call.signal, stream?.sink);
      } catch (err) {
        this.failedAttempt(lease, err, attempts, call.signal);
        continue;
      }
      if (res.status >= 200 && res.status < 300) {
        try {
          const meta = { latencyMs: performance.now() - started, attempts, model: request.model };
          // A server may answer a stream request with a whole completion.
          const result = stream?.active ? stream.result(meta) : parseCompletion(res.body, meta);
          this.replicas.succeeded(lease);
          return result;
        } catch (err) {
          // Retried like the connection reset it is; a complete JSON body of the wrong shape is not.
          if (!(err instanceof TruncatedResponseError)) {
            this.replicas.succeeded(lease);
            throw err;
          }
          this.failedAttempt(lease, err, attempts, call.signal);
          continue;
        }
      }
      if (res.status === 400 && dropRejectedExtension(res.body, this.caps)) {
        this.replicas.succeeded(lease);
        attempts--;
        continue;
      }
      await this.retryAfterStatus(lease, res, attempts, call.signal);
    }
  }

  /**
   * After a network error or timeout: the replica is down and the request goes on (to another replica,
   * or after the first comes back); throws when the error is not retriable or no attempt is left.
   */
  private failedAttempt(lease: Lease<JsonEndpoint>, err: unknown, attempts: number, signal?: AbortSignal): void {
    if (signal?.aborted) {
      this.replicas.released(lease);
      throw err;
    }
    const code = (err as NodeJS.ErrnoException).code ?? '';
    const retriable = err instanceof HttpTimeoutError || RETRIABLE_CODES.has(code);
    if (retriable) this.replicas.failed(lease);
    else this.replicas.released(lease);
    if (!retriable || attempts > this.opts.maxRetries)
      throw new LlmError(`${lease.item.url.origin}: ${(err as Error).message}`, null, attempts, retriable);
  }

  /**
   * After an error status: 5xx and 429 put the replica down (for its Retry-After, or the backoff) and the
   * request goes on elsewhere; 408, 409 and 425 wait here first. Throws when there is no next attempt.
   */
  private async retryAfterStatus(
    lease: Lease<JsonEndpoint>,
    res: HttpResponse,
    attempts: number,
    signal?: AbortSignal,
  ): Promise<void> {
    const down = res.status === 429 || res.status >= 500;
    const after = retryAfter(res);
    if (down) this.replicas.failed(lease, after);
    else this.replicas.succeeded(lease);
    const retriable = RETRIABLE_STATUS.has(res.status);
    if (!retriable || attempts > this.opts.maxRetries) {
      throw new LlmError(
        `${lease.item.url.origin} answered ${res.status}: ${errorText(res.body)}`,
        res.status,
        attempts,
        retriable,
      );
    }
    if (!down) await sleep(after ?? backoff(this.retryBaseMs, attempts), signal);
  }

  private downText(): string {
    const origins = this.replicas.items.map((e) => e.url.origin);
    return origins.length === 1 ? `${origins[0]} is down` : `every replica (${origins.join(', ')}) is down`;
  }
}

interface Caps {
  logprobs: boolean;
  tokenIds: boolean;
  stream: boolean;
}

const STREAM = ',"stream":true,"stream_options":{"include_usage":true}';

/** The request's JSON with the extensions still asked for appended (ChatRequest has no such keys). */
function withExtensions(encoded: string, caps: Caps): string {
  if (!caps.logprobs && !caps.tokenIds && !caps.stream) return encoded;
  const ids = caps.tokenIds ? ',"return_token_ids":true' : '';
  return `${encoded.slice(0, -1)}${caps.logprobs ? ',"logprobs":true' : ''}${ids}${caps.stream ? STREAM : ''}}`;
}

function dropRejectedExtension(body: string, caps: Caps): boolean {
  if (caps.tokenIds && body.includes('return_token_ids')) {
    caps.tokenIds = false;
    return true;
  }
  if (caps.logprobs && body.includes('logprobs')) {
    caps.logprobs = false;
    return true;
  }
  if (caps.stream && body.includes('stream')) {
    caps.stream = false;
    return true;
  }
  return false;
}

function backoff(base: number, attempt: number): number {
  const exp = Math.min(MAX_BACKOFF_MS, base * 2 ** (attempt - 1));
  return exp / 2 + Math.random() * (exp / 2);
}

/** Retry-After in ms (delay-seconds or an HTTP date), at most 30 s. */
function retryAfter(res: HttpResponse): number | undefined {
  const header = res.headers.get('retry-after');
  if (header === undefined || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.min(30_000, seconds * 1000) : undefined;
  const ms = Date.parse(header) - Date.now();
  return Number.isFinite(ms) ? Math.min(30_000, Math.max(0, ms)) : undefined;
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
