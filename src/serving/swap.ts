import { errorMessage } from '../errors.js';
import { postJson } from './post-json.js';
import { loraCall } from './vllm-lora.js';

/** One HTTP call of a swap. */
export interface SwapCall {
  action: 'load' | 'set default' | 'unload';
  /** The adapter (null: the base model, for `set default`). */
  loraName: string | null;
  ok: boolean;
  detail: string;
}

export interface SwapResult {
  /** The served name gives the new weights to new requests. */
  ok: boolean;
  calls: SwapCall[];
  /** The adapter the served name gave before (null: the base model). */
  previous: string | null;
  detail: string;
}

/**
 * Makes a running local server (llama.cpp or transformers engine) give `servedName` other weights without a restart:
 * `adapter`, loaded beside the base first (POST load_lora_adapter; one already loaded is kept), or the
 * base model (null); then POST set_default_adapter points the served name at it for new requests, and the
 * adapter it pointed at before is unloaded (the server drops it once the requests running on it finish), unless it is
 * in `keep` (asked for by its own name).
 */
export async function swapServedWeights(
  baseUrl: string,
  servedName: string,
  adapter: { name: string; path: string } | null,
  opts: { timeoutMs?: number; keep?: ReadonlySet<string> } = {},
): Promise<SwapResult> {
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const base = baseUrl.replace(/\/+$/, '');
  const calls: SwapCall[] = [];
  const fail = (detail: string): SwapResult => ({ ok: false, calls, previous: null, detail });
  const notServing = await checkServes(base, servedName, timeoutMs);
  if (notServing) return fail(notServing);
  let loaded = false;
  if (adapter) {
    const r = await loraCall({ baseUrl: base }, 'load', adapter.name, adapter.path, timeoutMs);
    const already = !r.ok && /already (been )?loaded/i.test(r.detail);
    calls.push({
      action: 'load',
      loraName: adapter.name,
      ok: r.ok || already,
      detail: already ? `${adapter.name} was loaded already` : r.detail,
    });
    if (!r.ok && !already) return fail(`could not load ${adapter.name}: ${r.detail}`);
    loaded = r.ok;
  }
  const set = await postJson(
    `${base}/set_default_adapter`,
    { lora_name: adapter?.name ?? null, model: servedName },
    timeoutMs,
  );
  calls.push({ action: 'set default', loraName: adapter?.name ?? null, ok: set.ok, detail: set.detail });
  if (!set.ok) {
    if (loaded) {
      const undo = await loraCall({ baseUrl: base }, 'unload', adapter!.name, undefined, timeoutMs);
      calls.push({ action: 'unload', loraName: adapter!.name, ok: undo.ok, detail: undo.detail });
    }
    return fail(`could not point ${servedName} at ${adapter?.name ?? 'the base model'}: ${set.detail}`);
  }
  const previous = typeof set.body?.previous === 'string' ? set.body.previous : null;
  let detail = `${servedName} now serves ${adapter ? `the adapter ${adapter.name}` : 'the base model'}`;
  if (previous && previous !== adapter?.name && !opts.keep?.has(previous)) {
    const r = await loraCall({ baseUrl: base }, 'unload', previous, undefined, timeoutMs);
    calls.push({ action: 'unload', loraName: previous, ok: r.ok, detail: r.detail });
    detail += r.ok ? `; ${previous} unloaded` : `; ${previous} could not be unloaded (${r.detail})`;
  }
  return { ok: true, calls, previous, detail };
}

/** Why the server does not answer as `servedName` (a reused pid or port would not), or undefined. */
async function checkServes(base: string, servedName: string, timeoutMs: number): Promise<string | undefined> {
  try {
    const res = await fetch(`${base}/models`, { signal: AbortSignal.timeout(Math.min(timeoutMs, 10_000)) });
    const body = (await res.json().catch(() => undefined)) as { data?: { id?: unknown }[] } | undefined;
    return body?.data?.some((m) => m.id === servedName)
      ? undefined
      : `${base}/models: HTTP ${res.status}, no model ${servedName}`;
  } catch (err) {
    return `${base}/models: ${errorMessage(err)}`;
  }
}
