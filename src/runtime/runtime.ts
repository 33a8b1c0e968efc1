import fs from 'node:fs';
import type { LoadedConfig } from '../config/load.js';
import { streamsCompletions, type ModelConfig } from '../config/schema.js';
import { UserError } from '../errors.js';
import { createLlmClient } from '../llm/client.js';
import { createEmbedder, type Embedder } from '../llm/embeddings.js';
import type { LlmClient } from '../llm/types.js';
import type { PyEvent } from '../python/module.js';
import { readProduction } from '../resources/production.js';
import type { SetContext } from '../resources/sets.js';
import { resolveWeights, resourceRef, type ResolvedWeights } from '../resources/weights.js';
import { activeJudgeModel } from '../rewards/judge.js';
import { modelPlan, type ModelPlan } from '../serving/model-plan.js';
import { localModels, servingPython } from '../serving/models.js';
import { isPostgresUrl, type Redactor, type ResourceSet, type Store } from '../store/index.js';
import { OtlpFollower } from '../telemetry/otlp-follower.js';
import { LocalServers } from './local-servers.js';
import { openStore, redactorFor, storeOptions } from './store.js';

export interface Judge {
  client: LlmClient;
  model: string;
}

export interface RuntimeOptions {
  /** Events of local model servers while they start. */
  onServerEvent?: (event: PyEvent) => void;
}

/**
 * What one command or loop cycle shares, built once: the loaded config, the store (opened on first
 * use), the redactor, LLM clients (one factory, with the API-key check), weights resolved once per
 * reference, and local model servers started on demand and shared by every stage that needs them.
 * close() stops the servers and closes the store, once.
 */
export class Runtime {
  readonly config: LoadedConfig['config'];
  readonly paths: LoadedConfig['paths'];
  readonly env: NodeJS.ProcessEnv;
  readonly redactor: Redactor;
  readonly servers: LocalServers;
  private opened?: Store;
  private follower?: OtlpFollower;
  private readonly resolved = new Map<string, ResolvedWeights>();

  constructor(
    readonly loaded: LoadedConfig,
    opts: RuntimeOptions = {},
  ) {
    this.config = loaded.config;
    this.paths = loaded.paths;
    this.env = loaded.env;
    this.redactor = redactorFor(loaded.config, loaded.env);
    this.servers = new LocalServers(this, { onEvent: opts.onServerEvent });
  }

  /** The store, created if it does not exist yet. */
  store(): Store {
    return (this.opened ??= openStore(this.loaded, { redactor: this.redactor }));
  }

  /** The store, which must exist already (a UserError otherwise): for commands that only read it. */
  existingStore(): Store {
    return (this.opened ??= openStore(this.loaded, { redactor: this.redactor, mustExist: true }));
  }

  /** err as the user sees it: a write the store's lock refused (outside store.transaction too) is a StoreBusyError. */
  explain(err: unknown): unknown {
    return this.opened ? this.opened.explain(err) : err;
  }

  storeExists(): boolean {
    if (this.opened !== undefined) return true;
    if (!isPostgresUrl(this.paths.storePath)) return fs.existsSync(this.paths.storePath);
    try {
      this.existingStore();
      return true;
    } catch (err) {
      if (err instanceof UserError && err.message.startsWith('no store at')) return false;
      throw err;
    }
  }

  /** A weights reference resolved (once per reference; forgetWeights after resources change). */
  weights(ref: string, where?: string): ResolvedWeights {
    const key = ref.trim();
    let w = this.resolved.get(key);
    if (!w) {
      w = resolveWeights(
        { paths: this.paths, store: () => (this.storeExists() ? this.existingStore() : undefined) },
        key,
        where,
      );
      this.resolved.set(key, w);
    }
    return w;
  }

  /** Resolved weights may be stale: a checkpoint was registered or production changed. */
  forgetWeights(): void {
    this.resolved.clear();
  }

  model(name: string): ModelConfig {
    if (!Object.hasOwn(this.config.models, name))
      throw new UserError(`unknown model "${name}"; models: ${Object.keys(this.config.models).join(', ')}`);
    return this.config.models[name]!;
  }

  /** The API key of a config model; a UserError naming the variable when it is configured but unset. */
  apiKey(name: string): string | undefined {
    const m = this.model(name);
    const key = m.api_key_env ? this.env[m.api_key_env] : undefined;
    if (m.api_key_env && !key)
      throw new UserError(`models.${name}.api_key_env: environment variable ${m.api_key_env} is not set`);
    return key;
  }

  /**
   * Checks that a config model can be used without starting anything: its API key, and for local
   * weights the weights themselves and the venv that serves them. Stages call it before their first write.
   */
  checkModel(name: string): void {
    const m = this.model(name);
    this.apiKey(name);
    if (!m.local) return;
    this.weights(m.local.weights, `models.${name}.local.weights`);
    servingPython(this.paths.venvDir, `models.${name}.local`);
  }

  /**
   * The client for a config model; a local model's server is started (or shared) first, on `weights`
   * (a weights reference, e.g. a candidate's `resource:NAME@V`) instead of its local.weights when given.
   */
  async client(name: string, opts: { logprobs?: boolean; weights?: string } = {}): Promise<LlmClient> {
    const m = this.model(name);
    const apiKey = this.apiKey(name);
    const server = m.local ? await this.servers.server(name, opts.weights) : undefined;
    const client = createLlmClient({
      baseUrl: server?.baseUrl ?? m.base_urls ?? m.base_url!,
      apiKey,
      timeoutMs: m.timeout_ms,
      maxRetries: m.max_retries,
      logprobs: opts.logprobs ?? m.logprobs,
      stream: streamsCompletions(m),
    });
    return server ? this.servers.track(server, client) : client;
  }

  /** The task embedder of the policies' features (policies.embedding_model), when one is configured. */
  async embedder(): Promise<Embedder | undefined> {
    const name = this.config.policies.embedding_model;
    if (!name) return undefined;
    const m = this.model(name);
    const baseUrl = m.local ? (await this.servers.server(name)).baseUrl : (m.base_urls ?? m.base_url!);
    return createEmbedder({ baseUrl, apiKey: this.apiKey(name), model: m.model, timeoutMs: m.timeout_ms });
  }

  /** What resource-set resolution needs (resources/sets.ts). */
  setContext(): SetContext {
    return {
      store: this.store(),
      config: this.config,
      baseDir: this.paths.baseDir,
      weights: (ref, where) => this.weights(ref, where),
    };
  }

  /**
   * How a server of a local config model (default: the first) serves production's weights, or `set`'s, to its
   * agents (serving/model-plan.ts); undefined without a store or when the set names none.
   */
  servingPlan(model?: string, set?: ResourceSet): ModelPlan | undefined {
    const name = model ?? localModels(this.config)[0];
    if (!name || !this.config.models[name]?.local || (!set && !this.storeExists())) return undefined;
    const store = set ? this.store() : this.existingStore();
    const pointer = set ? undefined : store.sets.pointer('production');
    const served = set ?? (pointer && store.sets.get(pointer.setId));
    return served ? modelPlan(this.config, served, name, (id) => store.resources.get(id)) : undefined;
  }

  /**
   * `resource:NAME@V` of the weights a server of a local config model starts on to serve production (the plan's
   * primary), when production names them; undefined otherwise (the model's own local.weights).
   */
  productionWeights(model?: string): string | undefined {
    const w = this.servingPlan(model)?.primary;
    return w ? resourceRef(w) : undefined;
  }

  /**
   * The production resource set as stored: a read. A stage brings it up to date with the config first, once per
   * command or cycle (pipeline/production-sync.ts); before any production set exists this is an error.
   */
  production(): ResourceSet {
    const set = readProduction(this.store());
    if (!set) throw new Error('no production set yet: syncProduction(rt) runs before production is read');
    return set;
  }

  /** The judge model's name when the judge reward is on. */
  judgeModel(): string | undefined {
    return activeJudgeModel(this.config.rewards);
  }

  async judge(): Promise<Judge | undefined> {
    const name = this.judgeModel();
    return name ? { client: await this.client(name, { logprobs: false }), model: this.model(name).model } : undefined;
  }

  /** The config models a collect needs: the agents', then the judge's. */
  modelsInUse(): string[] {
    const judge = this.judgeModel();
    return [...new Set([...this.config.agents.map((a) => a.model), ...(judge ? [judge] : [])])];
  }

  /**
   * With telemetry.otlp.endpoint set: the rollouts this command finishes go out as OTLP spans in the background
   * (collect, eval, the gateway and the loop ask for it); close() sends what is left. A no-op without an endpoint.
   */
  followTelemetry(onWarn?: (message: string) => void): void {
    const otlp = this.config.telemetry.otlp;
    if (!otlp.endpoint || this.follower) return;
    const opts = { onWarn, storeOptions: storeOptions(this.loaded) };
    this.follower = new OtlpFollower(this.store(), { ...otlp, endpoint: otlp.endpoint }, opts).start();
  }

  async close(): Promise<void> {
    try {
      await this.follower?.stop();
      this.follower = undefined;
      await this.servers.stopAll();
    } finally {
      this.opened?.close();
      this.opened = undefined;
    }
  }
}

/** Builds a runtime for fn and always closes it. */
export async function withRuntime<T>(
  loaded: LoadedConfig,
  fn: (rt: Runtime) => T | Promise<T>,
  opts: RuntimeOptions = {},
): Promise<T> {
  const rt = new Runtime(loaded, opts);
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}
