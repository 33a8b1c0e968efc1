import type { RunStatus } from '../trace/records.js';

export type { Reward, RewardInput, Rollout, RunStatus, Span, SpanInput, SpanType } from '../trace/records.js';
export { RUN_STATUSES, SPAN_TYPES } from '../trace/records.js';

export interface RolloutStart {
  id?: string;
  runId?: string | null;
  taskId?: string | null;
  source?: string;
  metadata?: Record<string, unknown>;
  /** The resource set that served it. */
  resourceSetId?: string | null;
}

export interface RolloutFinish {
  status: Exclude<RunStatus, 'running'>;
  error?: string | null;
  finalAnswer?: string | null;
  winner?: string | null;
  totalReward?: number | null;
  tokens?: number;
  toolCalls?: number;
  messages?: number;
  wallMs?: number;
}

export interface RolloutFilter {
  runId?: string;
  status?: RunStatus;
  taskId?: string;
  /** One source, or any of several. */
  source?: string | readonly string[];
  minReward?: number;
  maxReward?: number;
  limit?: number;
  offset?: number;
}
