/** What a trace is made of, as stored: rollouts, their spans and their rewards (shared by every layer that reads or writes traces). */
export const RUN_STATUSES = ['running', 'completed', 'failed', 'cancelled'] as const;

export type RunStatus = (typeof RUN_STATUSES)[number];

export const SPAN_TYPES = ['prompt', 'tool', 'reward', 'coordination', 'message'] as const;

export type SpanType = (typeof SPAN_TYPES)[number];

export interface SpanInput {
  type: SpanType;
  name: string;
  agent?: string | null;
  parentSeq?: number | null;
  /** Epoch milliseconds (fractional allowed); defaults to now. */
  startedAt?: number;
  durationMs?: number;
  payload?: unknown;
  /** JSON.stringify(payload), when the producer has it already; the store redacts it as it would the payload. */
  payloadJson?: string;
}

export interface Span {
  rolloutId: string;
  seq: number;
  parentSeq: number | null;
  type: SpanType;
  name: string;
  agent: string | null;
  startedAt: number;
  durationMs: number;
  payload: unknown;
}

export interface Rollout {
  num: number;
  id: string;
  runId: string | null;
  taskId: string | null;
  source: string;
  status: RunStatus;
  error: string | null;
  finalAnswer: string | null;
  winner: string | null;
  totalReward: number | null;
  tokens: number;
  toolCalls: number;
  messages: number;
  wallMs: number;
  metadata: Record<string, unknown>;
  /** The resource set that served it (null before resource sets, and for imported rollouts). */
  resourceSetId: string | null;
  startedAt: number;
  finishedAt: number | null;
}

export interface RewardInput {
  channel: string;
  family: string;
  value: number;
  reason?: string | null;
  agent?: string | null;
  targetSeq?: number | null;
}

export interface Reward extends Required<RewardInput> {
  id: number;
  rolloutId: string;
  createdAt: number;
}
