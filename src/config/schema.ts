/**
 * The config file's schema, composed of its sections (one module each under sections/, with the types,
 * helpers and rules that belong to it). The cross-field rules run after parsing: cross-section-rules.ts.
 */
import { z } from 'zod';
import { defaultAgents, defaultModels, defaultPrompts } from './defaults.js';
import { name } from './fields.js';
import { agentSchema } from './sections/agents.js';
import { collectSchema } from './sections/collect.js';
import { deploySchema } from './sections/deploy.js';
import { evalSchema } from './sections/eval.js';
import { gatewaySchema } from './sections/gateway.js';
import { loopSchema } from './sections/loop.js';
import { modelSchema } from './sections/models.js';
import { orchestratorSchema } from './sections/orchestrator.js';
import { policiesSchema } from './sections/policies.js';
import { privacySchema } from './sections/privacy.js';
import { projectSchema } from './sections/project.js';
import { promptOptSchema } from './sections/prompt-opt.js';
import { promptSchema } from './sections/prompts.js';
import { rewardsSchema } from './sections/rewards.js';
import { rolesSchema } from './sections/roles.js';
import { queueSchema, storeSchema } from './sections/store.js';
import { tasksSchema } from './sections/tasks.js';
import { telemetrySchema } from './sections/telemetry.js';
import { toolSchema } from './sections/tools.js';
import { trainSchema } from './sections/train.js';

export { MAX_CONCURRENCY, MAX_STEPS, MAX_TASKS } from './fields.js';
export type { AgentConfig } from './sections/agents.js';
export { DEFAULT_GATEWAY_PORT, type GatewayConfig } from './sections/gateway.js';
export { DEFAULT_LOOP_STEPS, LOOP_STEPS } from './sections/loop.js';
export {
  DEFAULT_SERVE_PORT,
  fixedPort,
  MAX_REPLICAS,
  type ModelConfig,
  remoteUrls,
  SERVE_ENGINES,
  streamsCompletions,
} from './sections/models.js';
export { delegationSchema } from './sections/orchestrator.js';
export {
  POLICY_ALGORITHMS,
  POLICY_KINDS,
  type PoliciesConfig,
  type PolicyAlgorithm,
  type PolicyKind,
} from './sections/policies.js';
export type { PrivacyConfig } from './sections/privacy.js';
export type { TelemetryConfig } from './sections/telemetry.js';
export { REWARD_FAMILIES } from './sections/rewards.js';
export { type Recipe, type RecipeAlgo, RECIPES, type RoleConfig, type RolesConfig } from './sections/roles.js';
export { BUILTIN_SUITES, DEFAULT_MAX_PROMPT_CHARS, DIFFICULTIES } from './sections/tasks.js';
export type { TrainConfig } from './sections/train.js';
export { type Algo, ALGOS, SELECTION_KEYS } from './sections/train-selection.js';

export const configSchema = z.strictObject({
  $schema: z.string().optional(),
  project: projectSchema.prefault({}),
  store: storeSchema.prefault({}),
  models: z.record(name, modelSchema).prefault(defaultModels),
  prompts: z.record(name, promptSchema).prefault(defaultPrompts),
  tools: z.record(name, toolSchema).default({}),
  agents: z.array(agentSchema).min(1).prefault(defaultAgents),
  roles: rolesSchema,
  orchestrator: orchestratorSchema.prefault({}),
  policies: policiesSchema.prefault({}),
  tasks: tasksSchema.prefault({}),
  rewards: rewardsSchema.prefault({}),
  collect: collectSchema.prefault({}),
  queue: queueSchema.prefault({}),
  train: trainSchema.prefault({}),
  eval: evalSchema.prefault({}),
  deploy: deploySchema.prefault({}),
  prompt_opt: promptOptSchema.prefault({}),
  loop: loopSchema.prefault({}),
  privacy: privacySchema.prefault({}),
  gateway: gatewaySchema.prefault({}),
  telemetry: telemetrySchema.prefault({}),
});

export type RLConfig = z.output<typeof configSchema>;
export type RLConfigInput = z.input<typeof configSchema>;
