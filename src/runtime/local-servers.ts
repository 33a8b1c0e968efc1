import type { ResolvedPaths } from '../config/paths.js';
import type { RLConfig } from '../config/schema.js';
import type { ResolvedWeights } from '../resources/weights.js';
import { serverKey, serveTarget, startServer, type ServedModel, type ServeOptions, type ServeTarget } from '../serving/models.js';
import { shareCores } from '../serving/share-cores.js';

interface Owner {
  config: RLConfig;
  paths: ResolvedPaths;
  weights(ref: string, where?: string): ResolvedWeights;
}

/**
 * The built-in servers of a run's local models: started on first use, one per distinct weights and
 * settings (two config models on the same weights share one), stopped together by stopAll. The llama.cpp
 * servers among them divide the machine's cores (share-cores.ts), anew each time one is started.
 */
export class LocalServers {
  private readonly byKey = new Map<string, Promise<ServedModel>>();
  private readonly byModel = new Map<string, Promise<ServedModel>>();
  /** The servers up, for dividing the cores, and the threads each has. */
  private readonly live = new Set<ServedModel>();
  private readonly threads = new Map<string, number>();
  private sharing: Promise<unknown> = Promise.resolve();

  constructor(private readonly owner: Owner, private readonly opts: Pick<ServeOptions, 'onEvent' | 'signal'> = {}) {}

  /**
   * The server of config model `name` (which has `local` weights), or of that model on other weights
   * (`weightsRef`: a candidate's), starting it if needed.
   */
  server(name: string, weightsRef?: string): Promise<ServedModel> {
    const modelKey = JSON.stringify([name, weightsRef ?? null]);
    let started = this.byModel.get(modelKey);
    if (!started) {
      const target = serveTarget(this.owner.config, (ref, where) => this.owner.weights(ref, where), name, weightsRef);
      const key = serverKey(target);
      started = this.byKey.get(key) ?? this.start(target);
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

  private async start(target: ServeTarget): Promise<ServedModel> {
    const server = await startServer(target, this.owner.paths, this.opts);
    this.live.add(server);
    void server.exited.then(() => this.live.delete(server));
    // one division at a time, each over the servers up when it starts
    this.sharing = this.sharing.then(() => shareCores([...this.live], this.threads));
    await this.sharing;
    return server;
  }

  async stopAll(): Promise<void> {
    const servers = await this.running();
    this.byKey.clear();
    this.byModel.clear();
    this.threads.clear();
    await Promise.all(servers.map((s) => s.stop()));
  }
}
