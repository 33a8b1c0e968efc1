import { endpointsOf, postJson, type HttpResponse, type JsonEndpoint } from './http.js';

export interface EmbedderOptions {
  /** OpenAI-compatible base URL, e.g. http://localhost:8000/v1; or the base URLs of replicas serving the same model. */
  baseUrl: string | readonly string[];
  apiKey?: string;
  model: string;
  timeoutMs: number;
}

export type Embedder = (texts: string[], signal?: AbortSignal) => Promise<number[][]>;

/**
 * OpenAI's `/v1/embeddings`: one vector per text, in order; a failed call is an error naming the server's reply.
 * Replicas take calls in turn; a call that finds one unreachable, or answering 5xx or 429, goes to the next.
 */
export function createEmbedder(opts: EmbedderOptions): Embedder {
  const endpoints = endpointsOf(opts.baseUrl, 'embeddings', opts.apiKey);
  let turn = 0;
  return async (texts, signal) => {
    const body = JSON.stringify({ model: opts.model, input: texts });
    const { res, endpoint } = await postAny(endpoints, turn++ % endpoints.length, body, opts.timeoutMs, signal);
    if (res.status !== 200)
      throw new Error(`embeddings from ${endpoint.url.origin}: HTTP ${res.status}: ${res.body.slice(0, 200)}`);
    const parsed = JSON.parse(res.body) as { data?: { index?: number; embedding?: unknown }[] };
    const data = [...(parsed.data ?? [])].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    const vectors = data.map((d) => d.embedding);
    if (
      vectors.length !== texts.length
      || !vectors.every((v) => Array.isArray(v) && v.every((x) => typeof x === 'number' && Number.isFinite(x)))
    ) {
      throw new Error(
        `embeddings from ${endpoint.url.origin}: expected ${texts.length} numeric vectors, got ${vectors.length}`,
      );
    }
    return vectors as number[][];
  };
}

/** The reply of the first endpoint from `first` on that answers other than 5xx or 429 (else the last one's reply or error). */
async function postAny(
  endpoints: JsonEndpoint[],
  first: number,
  body: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<{ res: HttpResponse; endpoint: JsonEndpoint }> {
  for (let k = 0; ; k++) {
    const endpoint = endpoints[(first + k) % endpoints.length]!;
    const last = k === endpoints.length - 1;
    let res: HttpResponse;
    try {
      res = await postJson(endpoint, body, timeoutMs, signal);
    } catch (err) {
      if (last || signal?.aborted) throw err;
      continue;
    }
    if (last || (res.status < 500 && res.status !== 429)) return { res, endpoint };
  }
}
