import { delegationSchema, type RLConfig } from '../config/schema.js';
import type { Embedder } from '../llm/embeddings.js';
import { delegationFromConfig } from '../orchestrator/delegation.js';
import type { DelegationInput, StopPolicy, TeamAgent } from '../orchestrator/types.js';
import { projectEmbedding, STOP_FEATURES, stopFeatures, taskFeatureNames, taskFeatures } from '../policies/index.js';
import { Rng } from '../tasks/prng.js';
import type { Task } from '../tasks/types.js';
import type { SpanInput } from '../trace/records.js';
import type { TeamPolicies } from './team-policies.js';

export const STOP_ARMS = ['continue', 'stop'];
/** Delegation: the delegate tool withheld, or offered with a child team of the delegating agent alone or of the whole team. */
export const DELEGATE_ARMS = ['none', 'solo', 'team'];
/** Dimensions of a task embedding's projection among the task features. */
export const EMBEDDING_DIM = 8;

/** What the policies decided before a rollout starts, and the stop policy it runs with. */
export interface RolloutPlan {
  team: TeamAgent[];
  /** The decisions taken up front, as `policy_decision` spans (written before the orchestration's). */
  spans: SpanInput[];
  stopPolicy?: StopPolicy;
  /** The routing arm taken, when a routing policy chose who works on the task. */
  routing?: string;
  /** Delegation as the delegate policy chose it (absent: as the config says). */
  delegation?: DelegationInput;
}

export interface PlanInput {
  task: Task;
  team: TeamAgent[];
  config: RLConfig;
  policies?: TeamPolicies;
  embedder?: Embedder;
  /** Seeds every decision of the rollout (evaluations pass the pair's seed, so both sides decide alike). */
  seed: number;
  signal?: AbortSignal;
}

/** Routing arms: policies.routing.arms, else each agent alone and the whole team. */
export function routingArms(config: RLConfig): Record<string, string[]> {
  const ids = config.agents.map((a) => a.id);
  return config.policies.routing.arms ?? { ...Object.fromEntries(ids.map((id) => [id, [id]])), team: ids };
}

/** Who works on the task, which tool each agent is offered first, and when to stop: each where a policy decides it. */
export async function planRollout(p: PlanInput): Promise<RolloutPlan> {
  const { policies } = p;
  if (!policies) return { team: p.team, spans: [] };
  const needsTask = policies.active('routing') || policies.active('tool') || policies.active('delegate');
  const embedding =
    needsTask && p.embedder
      ? projectEmbedding((await p.embedder([p.task.prompt], p.signal))[0]!, EMBEDDING_DIM)
      : undefined;
  const x = taskFeatures({ prompt: p.task.prompt, category: p.task.category ?? null }, embedding);
  const names = taskFeatureNames(embedding ? EMBEDDING_DIM : 0);
  const seedOf = (key: string) => Rng.fromKey(`${p.seed}:${p.task.id}:${key}`).int(0, 2 ** 31 - 1);
  const spans: SpanInput[] = [];
  let team = p.team;
  let routing: string | undefined;
  if (policies.active('routing')) {
    const armsByName = routingArms(p.config);
    const d = policies.decide('routing', {
      features: x,
      featureNames: names,
      arms: Object.keys(armsByName),
      seed: seedOf('routing'),
    });
    routing = d.chosen;
    const members = new Set(armsByName[d.chosen]);
    team = team.filter((a) => members.has(a.id));
    spans.push({ type: 'coordination', name: 'policy_decision', agent: null, payload: d });
  }
  if (policies.active('tool')) {
    const arms = Object.keys(p.config.tools);
    team = team.map((a) => {
      if (a.tools.length < 2) return a;
      const d = policies.decide('tool', {
        features: x,
        featureNames: names,
        arms,
        available: a.tools.map((t) => t.name),
        seed: seedOf(`tool:${a.id}`),
        agent: a.id,
      });
      spans.push({ type: 'coordination', name: 'policy_decision', agent: a.id, payload: d });
      const first = a.tools.find((t) => t.name === d.chosen)!;
      return { ...a, tools: [first, ...a.tools.filter((t) => t !== first)] };
    });
  }
  let delegation: DelegationInput | undefined;
  if (policies.active('delegate')) {
    const d = policies.decide('delegate', {
      features: x,
      featureNames: names,
      arms: DELEGATE_ARMS,
      seed: seedOf('delegate'),
    });
    spans.push({ type: 'coordination', name: 'policy_decision', agent: null, payload: d });
    // The limits stay the config's (or its defaults when the section is absent); the policy decides whether and with whom.
    const limits = delegationFromConfig(p.config.orchestrator.delegation ?? delegationSchema.parse({}))!;
    delegation =
      d.chosen === 'none'
        ? { ...limits, enabled: false }
        : { ...limits, enabled: true, shape: d.chosen as DelegationInput['shape'] };
  }
  return {
    team,
    spans,
    routing,
    ...(delegation ? { delegation } : {}),
    ...(policies.active('stop') ? { stopPolicy: stopPolicy(policies, seedOf) } : {}),
  };
}

function stopPolicy(policies: TeamPolicies, seedOf: (key: string) => number): StopPolicy {
  const started = performance.now();
  return (s) => {
    const features = stopFeatures({ ...s, elapsedMs: performance.now() - started });
    const d = policies.decide('stop', {
      features,
      featureNames: STOP_FEATURES,
      arms: STOP_ARMS,
      seed: seedOf(`stop:${s.round}`),
      round: s.round,
    });
    return { stop: d.chosen === 'stop', payload: d };
  };
}
