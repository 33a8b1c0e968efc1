import type { ResolvedPaths } from '../config/paths.js';
import type { RLConfig } from '../config/schema.js';
import type { LlmClient } from '../llm/types.js';
import type { ResolvedWeights } from '../resources/weights.js';
import { ServerStartError } from '../serving/local-server.js';
import {
  CLIENT_CONTEXT_TOKENS,
  serverKey,
  serveTarget,
  startServer,
  type ServedModel,
  type ServeOptions,
  type ServeTarget,
} from '../serving/models.js';
import { CoreSharing } from '../serving/share-cores.js';

interface Owner {
  config: RLConfig;
  paths: ResolvedPaths;
  weights(ref: string, where?: string): ResolvedWeights;
}

/** A run's server that dies (killed, out of memory) is started again on its port at most this often… */
export const MAX_RESTARTS = 3;
/** …within this window; a server that keeps dying stays down and its calls fail as before. */
const RESTART_WINDOW_MS = 10 * 60_000;

/**
 * The built-in servers of a run's local models: started on first use, one per distinct weights and
 * settings (two config models on the same weights share one), stopped together by stopAll. The llama.cpp
 * servers with requests in flight divide the machine's cores (CoreSharing) through the clients `track` gives.
 * A run's server that dies is started again on the same port, so its clients' retries reach the new one.
 */
export class LocalServers {
  private readonly byKey = new Map<string, Promise<ServedModel>>();
  private readonly byModel = new Map<string, Promise<ServedModel>>();
  readonly cores = new CoreSharing<ServedModel>();
  /** A dead server being started again: true once it is back. */
  private readonly restarting = new Map<ServedModel, Promise<boolean>>();
  /** Bumped by stopAll: a restart begun before it does not outlive it. */
  private generation = 0;

  constructor(
    private readonly owner: Owner,
    private readonly opts: Pick<ServeOptions, 'onEvent' | 'signal'> = {},
  ) {}

  /**
   * The server of config model `name` (which has `local` weights), or of that model on other weights
   * (`weightsRef`: a candidate's), starting it if needed. `forClients`: a server for outside clients (the
   * gateway's), which later deploys switch to production's weights (a run's own servers stay put) and which
   * gives each request CLIENT_CONTEXT_TOKENS of context, as `serve` does.
   */
  server(name: string, weightsRef?: string, forClients = false): Promise<ServedModel> {
    const modelKey = JSON.stringify([name, weightsRef ?? null, forClients]);
    let started = this.byModel.get(modelKey);
    if (!started) {
      const target = serveTarget(this.owner.config, (ref, where) => this.owner.weights(ref, where), name, weightsRef);
      const key = JSON.stringify([serverKey(target), forClients]);
      started = this.byKey.get(key) ?? this.start(target, forClients);
      started.catch(() => {}); // a failed start is reported to every caller, and must not go unhandled meanwhile
      this.byKey.set(key, started);
      this.byModel.set(modelKey, started);
    }
    return started;
  }

  /** Servers started so far. */
  async running(): Promise<ServedModel[]> {
    const all = await Promise.allSettled(this.byKey.values());
    return all.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  }

  /**
   * `client` (of `server`), counting its requests in flight for dividing the cores; a call that failed because its
   * server died is sent again once the server is back.
   */
  track(server: ServedModel, client: LlmClient): LlmClient {
    const tracked = this.cores.track(server, client);
    return {
      ...tracked,
      chat: async (...args) => {
        try {
          return await tracked.chat(...args);
        } catch (err) {
          if (!(await this.restarting.get(server))) throw err;
          return tracked.chat(...args);
        }
      },
    };
  }

  /** Starts a server; one killed while it started (kill -9, the OOM killer) is started once more, as a later death is. */
  private async start(target: ServeTarget, forClients: boolean): Promise<ServedModel> {
    const generation = this.generation;
    const restarts: number[] = [];
    let server: ServedModel;
    try {
      server = await startServer(target, this.owner.paths, this.serveOptions(forClients));
    } catch (err) {
      const killed = err instanceof ServerStartError && err.killed;
      if (!killed || generation !== this.generation || this.opts.signal?.aborted) throw err;
      const what = `the model server for "${target.servedName}" was killed while it started`;
      this.opts.onEvent?.({ event: 'progress', message: `${what}; starting it again` });
      server = await startServer(target, this.owner.paths, this.serveOptions(forClients));
      restarts.push(Date.now());
    }
    this.watch(server, target, forClients, restarts);
    return server;
  }

  private serveOptions(forClients: boolean, port?: number) {
    return {
      ...this.opts,
      followsProduction: forClients,
      // a run's own server keeps its weights for its life (the gateway's are swapped by deploys): merged
      mergeAdapter: !forClients,
      ...(forClients ? { contextTokens: CLIENT_CONTEXT_TOKENS } : {}),
      ...(port === undefined ? {} : { port }),
    };
  }

  /**
   * Counts the server's requests for core sharing and, when it dies on its own, starts it again on its port and
   * makes `server` (the object every client holds) the new process. The gateway's servers (forClients) are left
   * down: a deploy may have swapped their weights, which a restart would undo.
   */
  private watch(server: ServedModel, target: ServeTarget, forClients: boolean, restarts: number[]): void {
    this.cores.add(server);
    const pid = server.pid;
    const generation = this.generation;
    const stopped = () => generation !== this.generation || this.opts.signal?.aborted;
    void server.exited.then(async (code) => {
      this.cores.remove(server);
      const now = Date.now();
      const recent = restarts.filter((t) => now - t < RESTART_WINDOW_MS);
      if (stopped() || forClients || server.pid !== pid) return;
      const what = `the model server for "${target.servedName}" (pid ${pid}) exited (${code ?? 'killed'})`;
      if (recent.length >= MAX_RESTARTS) {
        this.opts.onEvent?.({ event: 'progress', message: `${what}; ${MAX_RESTARTS} restarts already: left down` });
        return;
      }
      this.opts.onEvent?.({ event: 'progress', message: `${what}; starting it again` });
      const back = this.restart(server, target, what);
      this.restarting.set(server, back);
      if (await back) this.watch(server, target, forClients, [...recent, now]);
      this.restarting.delete(server);
    });
  }

  /** Starts the server again on its port and makes `server` the new process; false when it could not. */
  private async restart(server: ServedModel, target: ServeTarget, what: string): Promise<boolean> {
    const generation = this.generation;
    try {
      const port = Number(new URL(server.baseUrl).port);
      const again = await startServer(target, this.owner.paths, this.serveOptions(false, port));
      if (generation !== this.generation) {
        await again.stop();
        return false;
      }
      Object.assign(server, again);
      return true;
    } catch (err) {
      this.opts.onEvent?.({ event: 'progress', message: `${what}; could not start it again: ${String(err)}` });
      return false;
    }
  }

  async stopAll(): Promise<void> {
    this.generation++;
    const servers = await this.running();
    this.byKey.clear();
    this.byModel.clear();
    await this.cores.settled();
    await Promise.all(servers.map((s) => s.stop()));
  }
}
