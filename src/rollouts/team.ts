import type { LoadedConfig } from '../config/load.js';
import { UserError } from '../errors.js';
import { createLlmClient } from '../llm/client.js';
import type { LlmClient } from '../llm/types.js';
import type { TeamAgent } from '../orchestrator/types.js';
import { resolvePrompts } from '../resources/prompts.js';
import type { Store } from '../store/index.js';
import { toolDefinition } from '../tools/runner.js';

export interface TeamSetup {
  team: TeamAgent[];
  judge?: { client: LlmClient; model: string };
  /** Prompt resource id per agent, recorded on every rollout. */
  promptVersions: Record<string, string>;
  stop(): Promise<void>;
}

/** Models that need the built-in server: those of the agents (and the judge) with `local` weights. */
export function localModelsInUse(loaded: LoadedConfig): string[] {
  const { config } = loaded;
  const used = new Set([...config.agents.map((a) => a.model), ...(config.rewards.judge.model && (config.rewards.weights.judge ?? 0) !== 0 ? [config.rewards.judge.model] : [])]);
  return [...used].filter((m) => config.models[m]?.local);
}

/** Builds the team: endpoints (starting local servers as needed), clients, production prompts, tools. */
export async function setupTeam(loaded: LoadedConfig, store: Store): Promise<TeamSetup> {
  const env = loaded.env;
  const { config } = loaded;
  const local = localModelsInUse(loaded);
  let baseUrls: Record<string, string> = {};
  let stopServers = async () => {};
  if (local.length) {
    const { startLocalModels } = await import('../pipeline/serve.js');
    const started = await startLocalModels(loaded, local, store);
    baseUrls = started.baseUrls;
    stopServers = started.stopAll;
  }
  const clients = new Map<string, LlmClient>();
  const clientFor = (name: string): LlmClient => {
    const m = config.models[name]!;
    if (!clients.has(name)) {
      const apiKey = m.api_key_env ? env[m.api_key_env] : undefined;
      if (m.api_key_env && !apiKey) throw new UserError(`models.${name}.api_key_env: environment variable ${m.api_key_env} is not set`);
      clients.set(name, createLlmClient({ baseUrl: baseUrls[name] ?? m.base_url!, apiKey, timeoutMs: m.timeout_ms, maxRetries: m.max_retries, logprobs: m.logprobs }));
    }
    return clients.get(name)!;
  };
  try {
    const prompts = resolvePrompts(config.prompts, loaded.paths.baseDir, store);
    const team: TeamAgent[] = config.agents.map((a, i) => ({
      id: a.id, label: `agent${i + 1}`, model: config.models[a.model]!.model, systemPrompt: prompts.get(a.system_prompt)!.content ?? '',
      temperature: a.temperature, maxTokens: a.max_tokens, toolMode: a.tool_mode, implicitAnswer: a.implicit_answer, tools: a.tools.map((t) => toolDefinition(t, config.tools)), client: clientFor(a.model),
      samples: config.collect.samples_per_turn,
    }));
    const judgeName = config.rewards.judge.model;
    const judge = judgeName && (config.rewards.weights.judge ?? 0) !== 0 ? { client: clientFor(judgeName), model: config.models[judgeName]!.model } : undefined;
    const promptVersions = Object.fromEntries(config.agents.map((a) => [a.id, prompts.get(a.system_prompt)!.id]));
    return { team, judge, promptVersions, stop: stopServers };
  } catch (err) {
    await stopServers();
    throw err;
  }
}
