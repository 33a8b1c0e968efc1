import type { LlmClient } from '../llm/types.js';
import type { TeamAgent } from '../orchestrator/types.js';
import { resolvePrompts } from '../resources/prompts.js';
import type { Judge, Runtime } from '../runtime/runtime.js';
import { toolDefinition } from '../tools/runner.js';

export interface TeamSetup {
  team: TeamAgent[];
  judge?: Judge;
  /** Prompt resource id per agent, recorded on every rollout. */
  promptVersions: Record<string, string>;
}

/**
 * Builds the team: clients for every model in use (API keys checked and local servers started before
 * anything is written), then the production prompts and the tools.
 */
export async function setupTeam(rt: Runtime): Promise<TeamSetup> {
  const { config } = rt;
  for (const name of rt.modelsInUse()) rt.apiKey(name);
  const clients = new Map<string, LlmClient>();
  await Promise.all(config.agents.map(async (a) => clients.set(a.model, await rt.client(a.model))));
  const judge = await rt.judge();
  const prompts = await resolvePrompts(config.prompts, rt.paths.baseDir, () => rt.store());
  const team: TeamAgent[] = config.agents.map((a, i) => ({
    id: a.id, label: `agent${i + 1}`, model: rt.model(a.model).model, systemPrompt: prompts.get(a.system_prompt)!.content ?? '',
    temperature: a.temperature, maxTokens: a.max_tokens, toolMode: a.tool_mode, implicitAnswer: a.implicit_answer,
    tools: a.tools.map((t) => toolDefinition(t, config.tools)), client: clients.get(a.model)!, samples: config.collect.samples_per_turn,
  }));
  const promptVersions = Object.fromEntries(config.agents.map((a) => [a.id, prompts.get(a.system_prompt)!.id]));
  return { team, judge, promptVersions };
}
