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
export async function shareCores(
  servers: readonly CoreUser[],
  current: Map<string, number>,
  timeoutMs = 30_000,
): Promise<string[]> {
  const cpu = servers.filter((s) => s.ready.backend === 'llama.cpp' && typeof s.ready.threads === 'number');
  if (!cpu.length) return [];
  const cores = Math.max(...cpu.map((s) => s.ready.threads as number));
  const each = threadsEach(cores, cpu.length);
  const failures: string[] = [];
  await Promise.all(
    cpu.map(async (s) => {
      if ((current.get(s.baseUrl) ?? (s.ready.threads as number)) === each) return;
      const r = await postJson(`${s.baseUrl.replace(/\/v1\/?$/, '')}/threads`, { threads: each }, timeoutMs);
      if (r.ok) current.set(s.baseUrl, each);
      else failures.push(r.detail);
    }),
  );
  return failures;
}

/**
 * The cores of a run's llama.cpp servers, divided among those with requests in flight, anew whenever one
 * becomes busy or idle: an evaluation's baseline and candidate decoding side by side get half each, a
 * candidate measured alone (the baseline's results reused) all of them. Idle servers keep what they have
 * (their threads do not run until a request arrives, and then they count as busy).
 */
export class CoreSharing<S extends CoreUser> {
  private readonly inFlight = new Map<S, number>();
  private readonly threads = new Map<string, number>();
  private sharing: Promise<unknown> = Promise.resolve();
  private pending = false;

  add(server: S): void {
    this.inFlight.set(server, 0);
  }

  remove(server: S): void {
    this.inFlight.delete(server);
    this.threads.delete(server.baseUrl);
  }

  /** `client` of `server`, counting its requests in flight. */
  track<C extends { chat: (...args: never[]) => Promise<unknown> }>(server: S, client: C): C {
    return {
      ...client,
      chat: async (...args: Parameters<C['chat']>) => {
        this.busy(server, 1);
        try {
          return await client.chat(...args);
        } finally {
          this.busy(server, -1);
        }
      },
    };
  }

  /** Resolves once the divisions asked for so far are done. */
  settled(): Promise<unknown> {
    return this.sharing;
  }

  private busy(server: S, change: 1 | -1): void {
    const before = this.inFlight.get(server);
    if (before === undefined) return;
    // a request that was in flight when its server was restarted ends against the new count
    this.inFlight.set(server, Math.max(0, before + change));
    if ((before === 0) === (change === 1)) this.reshare();
  }

  /** One division at a time, over the servers busy when it runs; changes meanwhile are taken by the next. */
  private reshare(): void {
    if (this.pending) return;
    this.pending = true;
    this.sharing = this.sharing.then(async () => {
      this.pending = false;
      const busy = [...this.inFlight].filter(([, n]) => n > 0).map(([s]) => s);
      // a server that refuses keeps its own threads and still serves: nothing to stop for
      if (busy.length) await shareCores(busy, this.threads);
    });
  }
}
