import type { ResolvedPaths } from '../config/paths.js';
import type { RLConfig } from '../config/schema.js';
import type { LlmClient } from '../llm/types.js';
import type { ResolvedWeights } from '../resources/weights.js';
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

/**
 * The built-in servers of a run's local models: started on first use, one per distinct weights and
 * settings (two config models on the same weights share one), stopped together by stopAll. The llama.cpp
 * servers with requests in flight divide the machine's cores (CoreSharing) through the clients `track` gives.
 */
export class LocalServers {
  private readonly byKey = new Map<string, Promise<ServedModel>>();
  private readonly byModel = new Map<string, Promise<ServedModel>>();
  readonly cores = new CoreSharing<ServedModel>();

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

  /** `client` (of `server`), counting its requests in flight for dividing the cores. */
  track(server: ServedModel, client: LlmClient): LlmClient {
    return this.cores.track(server, client);
  }

  private async start(target: ServeTarget, forClients: boolean): Promise<ServedModel> {
    const server = await startServer(target, this.owner.paths, {
      ...this.opts,
      followsProduction: forClients,
      ...(forClients ? { contextTokens: CLIENT_CONTEXT_TOKENS } : {}),
    });
    this.cores.add(server);
    void server.exited.then(() => this.cores.remove(server));
    return server;
  }

  async stopAll(): Promise<void> {
    const servers = await this.running();
    this.byKey.clear();
    this.byModel.clear();
    await this.cores.settled();
    await Promise.all(servers.map((s) => s.stop()));
  }
}
