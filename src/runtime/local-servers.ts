import type { ResolvedPaths } from '../config/paths.js';
import type { RLConfig } from '../config/schema.js';
import type { LlmClient } from '../llm/types.js';
import type { ResolvedWeights } from '../resources/weights.js';
import {
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
   * (`weightsRef`: a candidate's), starting it if needed. `followsProduction`: a server this call starts
   * is switched by later deploys to production's weights (the gateway's; a run's own servers stay put).
   */
  server(name: string, weightsRef?: string, followsProduction = false): Promise<ServedModel> {
    const modelKey = JSON.stringify([name, weightsRef ?? null]);
    let started = this.byModel.get(modelKey);
    if (!started) {
      const target = serveTarget(this.owner.config, (ref, where) => this.owner.weights(ref, where), name, weightsRef);
      const key = serverKey(target);
      started = this.byKey.get(key) ?? this.start(target, followsProduction);
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

  private async start(target: ServeTarget, followsProduction: boolean): Promise<ServedModel> {
    const server = await startServer(target, this.owner.paths, { ...this.opts, followsProduction });
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
