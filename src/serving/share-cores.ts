import { postJson } from './post-json.js';

/** What dividing the cores needs of a running local server. */
export interface CoreUser {
  baseUrl: string;
  /** The server's ready event: `backend`, and for llama.cpp `threads` (every core it may use, as it started). */
  ready: Record<string, unknown>;
}

/** The threads each of `servers` llama.cpp servers gets on `cores` cores. */
export function threadsEach(cores: number, servers: number): number {
  return Math.max(1, Math.floor(cores / Math.max(1, servers)));
}

/**
 * Divides the cores among the llama.cpp servers of one run (POST /threads to each whose share changed), so
 * that servers decoding at the same time, such as an evaluation's baseline and candidate, do not each spin
 * threads on every core. `current` holds the threads each server has now and is updated; a server that
 * refuses keeps its own. Returns the failures' details.
 */
export async function shareCores(servers: readonly CoreUser[], current: Map<string, number>, timeoutMs = 30_000): Promise<string[]> {
  const cpu = servers.filter((s) => s.ready.backend === 'llama.cpp' && typeof s.ready.threads === 'number');
  if (!cpu.length) return [];
  const cores = Math.max(...cpu.map((s) => s.ready.threads as number));
  const each = threadsEach(cores, cpu.length);
  const failures: string[] = [];
  await Promise.all(cpu.map(async (s) => {
    if ((current.get(s.baseUrl) ?? (s.ready.threads as number)) === each) return;
    const r = await postJson(`${s.baseUrl.replace(/\/v1\/?$/, '')}/threads`, { threads: each }, timeoutMs);
    if (r.ok) current.set(s.baseUrl, each);
    else failures.push(r.detail);
  }));
  return failures;
}
