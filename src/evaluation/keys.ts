import type { RLConfig } from '../config/schema.js';
import type { Task } from '../tasks/types.js';
import { canonicalJson, sha256 } from '../util/hash.js';

/** A task by its content: a result measured on it is reused only for the same prompt, reference and metadata. */
export function taskHash(task: Task): string {
  return sha256(
    canonicalJson({ prompt: task.prompt, reference: task.reference ?? null, metadata: task.metadata }),
  ).slice(0, 16);
}

/**
 * Everything besides the resource set that changes what an orchestration does or how it is scored:
 * the orchestrator, the agents' settings, where their models run (a model's weights are the set's),
 * the tools and the rewards (which prompts serve, the presenter's included, is the set's). A stored result is reused only under the same settings.
 */
export function settingsHash(config: RLConfig): string {
  const models = Object.fromEntries(
    [...new Set(config.agents.map((a) => a.model))].map((name) => {
      const m = config.models[name]!;
      // Replicas as a set (their order only spreads load); absent for other models, whose keys stay as they were.
      const replicas = m.base_urls ? { base_urls: [...m.base_urls].sort() } : {};
      return [
        name,
        {
          model: m.model,
          base_url: m.base_url ?? null,
          ...replicas,
          // merge_adapter too: an adapter served merged decodes with other numerics than the same adapter unmerged
          // (their sampled answers differ), so a result measured one way is not the other's baseline
          local: m.local
            ? {
                device: m.local.device,
                engine: m.local.engine,
                max_batch_size: m.local.max_batch_size,
                merge_adapter: m.local.merge_adapter,
              }
            : null,
        },
      ];
    }),
  );
  // Which prompts serve is the set's (its serving hash), like the agents' system prompts.
  const agents = config.agents.map(({ system_prompt: _p, ...a }) => a);
  const { presenter_prompt: _pp, ...orchestrator } = config.orchestrator;
  // agreement's settings change nothing while it has no weight, nor references while on (their default): left out
  // then, so keys stored before they existed stay
  const { agreement: _ag, references, ...rest } = config.rewards;
  const rewards = {
    ...rest,
    ...(config.rewards.weights.agreement ? { agreement: config.rewards.agreement } : {}),
    ...(references === 'on' ? {} : { references }),
  };
  return sha256(canonicalJson({ orchestrator, agents, models, tools: config.tools, rewards })).slice(0, 16);
}
