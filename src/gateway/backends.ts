import { errorMessage } from '../errors.js';
import { endpointsOf, type JsonEndpoint } from '../llm/http.js';
import { Replicas } from '../llm/replicas.js';
import { resourceRef } from '../resources/weights.js';
import type { Runtime } from '../runtime/runtime.js';
import { loadNamed } from '../serving/model-plan.js';
import { ApiError } from './api-error.js';
import type { Extensions } from './request.js';

/** Where a logical model's requests go: its replicas (or its local server), its own model name, its limits. */
export interface Backend {
  /** The config model (models.<name>): what clients name. */
  name: string;
  /** The model name the backend serves (models.<name>.model). */
  model: string;
  /** Its replicas' base URLs (…/v1): where a canary's adapter is loaded. */
  baseUrls: readonly string[];
  replicas: Replicas<JsonEndpoint>;
  /** The same replicas' /embeddings. */
  embeddings: Replicas<JsonEndpoint>;
  /** Learned: a backend that refused an extension once is not asked again. */
  caps: Extensions;
  timeoutMs: number;
  maxRetries: number;
}

/** The config models as backends, a local model's server started on its first request (once, shared). */
export class Backends {
  private readonly started = new Map<string, Promise<Backend>>();

  constructor(private readonly rt: Runtime) {}

  /** The logical model names routed: the config models, then gateway.aliases. */
  names(): string[] {
    return [...Object.keys(this.rt.config.models), ...Object.keys(this.rt.config.gateway.aliases)];
  }

  /** The agent an alias names (gateway.aliases.<name>.agent), if any. */
  agentOf(name: string): string | undefined {
    return Object.hasOwn(this.rt.config.gateway.aliases, name)
      ? this.rt.config.gateway.aliases[name]!.agent
      : undefined;
  }

  get(requested: string): Promise<Backend> {
    const aliases = this.rt.config.gateway.aliases;
    const name = Object.hasOwn(aliases, requested) ? aliases[requested]!.model : requested;
    if (!Object.hasOwn(this.rt.config.models, name)) {
      const message = `The model \`${requested}\` does not exist; models: ${this.names().join(', ')}`;
      return Promise.reject(new ApiError(404, message, 'model', 'model_not_found'));
    }
    let backend = this.started.get(name);
    if (!backend) {
      backend = this.start(name);
      this.started.set(name, backend);
      // a failed start (a missing key, a server that did not come up) is tried again by the next request
      backend.catch(() => this.started.delete(name));
    }
    return backend;
  }

  /** The local server of production's weights, with each agent's own adapter loaded beside them by name (roles). */
  private async local(name: string): Promise<string> {
    const plan = this.rt.servingPlan(name);
    const server = await this.rt.servers.server(name, plan && resourceRef(plan.primary), true);
    const failed = (await loadNamed(server.baseUrl, plan?.named ?? [])).find((c) => !c.ok);
    if (failed) throw new Error(`could not load the adapter ${failed.loraName}: ${failed.detail}`);
    return server.baseUrl;
  }

  private async start(name: string): Promise<Backend> {
    const m = this.rt.config.models[name]!;
    let apiKey: string | undefined;
    let baseUrl: string | readonly string[];
    try {
      apiKey = this.rt.apiKey(name);
      // a local model is served production's weights, and a deploy switches them: the traffic follows production
      baseUrl = m.local ? await this.local(name) : (m.base_urls ?? m.base_url!);
    } catch (err) {
      throw new ApiError(503, `model ${name} is not available: ${errorMessage(err)}`, 'model', 'model_unavailable');
    }
    const backoff = { baseBackoffMs: 250, maxBackoffMs: 10_000 };
    const replicas = new Replicas(endpointsOf(baseUrl, 'chat/completions', apiKey), backoff);
    const embeddings = new Replicas(endpointsOf(baseUrl, 'embeddings', apiKey), backoff);
    return {
      name,
      model: m.model,
      baseUrls: typeof baseUrl === 'string' ? [baseUrl] : baseUrl,
      replicas,
      embeddings,
      caps: { logprobs: m.logprobs, tokenIds: m.logprobs },
      timeoutMs: m.timeout_ms,
      maxRetries: m.max_retries,
    };
  }
}

/**
 * After a backend's 400: drops the extension it refused when the gateway added it (the client did not
 * ask for it) and says to send again.
 */
export function dropRefused(body: string, caps: Extensions, wants: { logprobs: boolean; tokenIds: boolean }): boolean {
  if (caps.tokenIds && !wants.tokenIds && body.includes('return_token_ids')) {
    caps.tokenIds = false;
    return true;
  }
  if (caps.logprobs && !wants.logprobs && body.includes('logprobs')) {
    caps.logprobs = false;
    return true;
  }
  return false;
}
