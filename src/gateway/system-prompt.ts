import type { GatewayConfig } from '../config/schema.js';
import type { ResourceSet, Store } from '../store/index.js';
import type { GatewaySystemPrompt } from '../trace/payloads.js';
import { BoundedCache } from '../util/bounded-cache.js';
import type { ClientRequest } from './request.js';

/** The system prompt an agent has in a resource set. */
export interface AgentPrompt {
  text: string;
  /** The prompt resource, `name@version`. */
  resource: string;
  setId: string;
}

/** What the captured span says of a replaced system prompt (payload.gateway.system_prompt). */
export type SystemPromptNote = GatewaySystemPrompt;

/** Roles that carry instructions: OpenAI's newer `developer` takes the place of `system`. */
const SYSTEM_ROLES = new Set(['system', 'developer']);

function isSystem(m: unknown): boolean {
  return typeof m === 'object' && m !== null && SYSTEM_ROLES.has((m as { role?: unknown }).role as string);
}

/**
 * The body with its system messages replaced by one holding `prompt`, where the first of them was (at
 * the start when the client sent none); every other field and message as it was. The body is not changed.
 */
export function replaceSystemPrompt(
  body: Record<string, unknown>,
  prompt: string,
): { body: Record<string, unknown>; removed: number } {
  const messages = body.messages as unknown[];
  const first = messages.findIndex(isSystem);
  const kept = messages.filter((m) => !isSystem(m));
  const removed = messages.length - kept.length;
  kept.splice(first < 0 ? 0 : first, 0, { role: 'system', content: prompt });
  return { body: { ...body, messages: kept }, removed };
}

/**
 * The per-request hook of gateway.agents.<id>.system_prompt: production. The prompt of an agent in a
 * set is read from the store once per set and agent; a request reads memory only.
 */
export class SystemPrompts {
  private readonly prompts = new BoundedCache<string, AgentPrompt | null>(256);

  constructor(
    private readonly store: Store,
    private readonly agents: GatewayConfig['agents'],
  ) {}

  /** Whether any agent has its system prompt replaced. */
  get active(): boolean {
    return Object.values(this.agents).some((a) => a.system_prompt === 'production');
  }

  /**
   * The request as the backend gets it when `set` serves it: an opted-in agent's system messages
   * replaced by its prompt in that set; any other request (or a set without the agent) as it came.
   */
  apply(
    request: ClientRequest,
    agent: string | null,
    set: ResourceSet | undefined,
  ): { request: ClientRequest; note?: SystemPromptNote } {
    if (agent === null || !set || !Object.hasOwn(this.agents, agent)) return { request };
    if (this.agents[agent]!.system_prompt !== 'production') return { request };
    const prompt = this.promptOf(set, agent);
    if (!prompt) return { request };
    const { body, removed } = replaceSystemPrompt(request.body, prompt.text);
    const note: SystemPromptNote = {
      replaced: true,
      resource: prompt.resource,
      set_id: prompt.setId,
      client_messages: removed,
    };
    return { request: { ...request, body }, note };
  }

  /** The agent's prompt in the set (cached), or undefined when the set has none for it. */
  promptOf(set: ResourceSet, agent: string): AgentPrompt | undefined {
    const read = (): AgentPrompt | null => {
      const id = Object.hasOwn(set.members.agents, agent) ? set.members.agents[agent]!.prompt : undefined;
      const r = id ? this.store.resources.get(id) : undefined;
      if (!r || r.kind !== 'prompt' || typeof r.content !== 'string') return null;
      return { text: r.content, resource: `${r.name}@${r.version}`, setId: set.id };
    };
    return this.prompts.get(`${set.id}\u0000${agent}`, read) ?? undefined;
  }
}
