import { errorMessage } from '../errors.js';

/** POSTs a JSON body to one of our server's routes; never throws: ok, a detail line, and the parsed answer. */
export async function postJson(
  url: string,
  body: unknown,
  timeoutMs: number,
): Promise<{ ok: boolean; detail: string; body?: Record<string, unknown> }> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    let parsed: Record<string, unknown> | undefined;
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      parsed = undefined;
    }
    return {
      ok: res.ok,
      detail: res.ok ? `${url}: ${res.status}` : `${url}: HTTP ${res.status} ${text.slice(0, 500)}`,
      body: parsed,
    };
  } catch (err) {
    return { ok: false, detail: `${url}: ${errorMessage(err)}` };
  }
}
