export { buildDataset, BUILDERS, type BuildDatasetInput, type BuildDatasetResult } from './build.js';
export {
  assertGates,
  checkGates,
  type GateCheck,
  type GateResult,
  type GateStats,
  type GateThresholds,
} from './gates.js';
export { chatMessages, completionText, promptKey, type ChatMessage } from './messages.js';
export {
  agentMatcher,
  DEFAULT_DATASET_OPTIONS,
  DEFAULT_SYSTEM_PROMPT,
  resolveDatasetOptions,
  type AgentMatch,
  type DatasetOptions,
  type DatasetOptionsInput,
  type DpoOptions,
  type GrpoOptions,
  type PpoOptions,
  type SftOptions,
} from './options.js';
export { TraceReader, type TraceRecord, type TraceSpan } from './read-traces.js';
export { RolloutIndex, UNCATEGORIZED } from './rollout-index.js';
export type { Augment, AugmentRow, AugmentSource, HardTask } from './augment.js';
export type { DatasetStats, RowInfo } from './stats.js';
export type { Algo, DatasetRow, DpoRow, GrpoCompletion, GrpoRow, PpoRow, SftRow } from './types.js';
export { datasetsDir, readManifest, removeStaleTemps, type DatasetManifest } from './writer.js';
export { RoleMap, spanSite, type CallSite } from './role-calls.js';
export { attributeRollout, sameAnswer, type AttributedKind, type Attribution } from './role-rewards.js';
export {
  buildRoleDatasets,
  ROLE_FAMILY,
  roleContext,
  roleDecisions,
  roleRecord,
  type RoleBuildInput,
  type RoleContext,
  type RoleDataset,
  type RoleDatasetsInput,
  type RoleDecision,
} from './roles.js';
