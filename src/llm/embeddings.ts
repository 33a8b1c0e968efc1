import { jsonEndpoint, postJson } from './http.js';

export interface EmbedderOptions {
  /** OpenAI-compatible base URL, e.g. http://localhost:8000/v1 */
  baseUrl: string;
  apiKey?: string;
  model: string;
  timeoutMs: number;
}

export type Embedder = (texts: string[], signal?: AbortSignal) => Promise<number[][]>;

/** OpenAI's `/v1/embeddings`: one vector per text, in order; a failed call is an error naming the server's reply. */
export function createEmbedder(opts: EmbedderOptions): Embedder {
  const endpoint = jsonEndpoint(new URL(`${opts.baseUrl.replace(/\/+$/, '')}/embeddings`), opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {});
  return async (texts, signal) => {
    const res = await postJson(endpoint, JSON.stringify({ model: opts.model, input: texts }), opts.timeoutMs, signal);
    if (res.status !== 200) throw new Error(`embeddings from ${endpoint.url.origin}: HTTP ${res.status}: ${res.body.slice(0, 200)}`);
    const body = JSON.parse(res.body) as { data?: { index?: number; embedding?: unknown }[] };
    const data = [...(body.data ?? [])].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    const vectors = data.map((d) => d.embedding);
    if (vectors.length !== texts.length || !vectors.every((v) => Array.isArray(v) && v.every((x) => typeof x === 'number' && Number.isFinite(x)))) {
      throw new Error(`embeddings from ${endpoint.url.origin}: expected ${texts.length} numeric vectors, got ${vectors.length}`);
    }
    return vectors as number[][];
  };
}
