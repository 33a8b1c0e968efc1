import type { Task } from '../tasks/types.js';
import type { ChatMessage } from './messages.js';
import type { PolicyCheck } from './on-policy.js';
import type { DatasetOptions } from './options.js';
import type { TraceReader } from './read-traces.js';
import type { RolloutIndex } from './rollout-index.js';
import type { RowInfo, StatsCollector } from './stats.js';

export type { Algo } from '../config/schema.js';

export type Meta = Record<string, unknown>;

/** Row shapes of docs/trainer-protocol.md. */
export interface SftRow {
  messages: ChatMessage[];
  reward: number;
  meta: Meta;
}

export interface GrpoCompletion {
  content: string;
  reward: number;
  advantage: number;
  token_ids: number[] | null;
  logprobs: number[] | null;
  /** The sampling temperature of the completion's request. */
  temperature: number;
  meta: Meta;
}

export interface GrpoRow {
  group_id: string;
  prompt: ChatMessage[];
  completions: GrpoCompletion[];
}

export interface DpoRow {
  prompt: ChatMessage[];
  chosen: [{ role: 'assistant'; content: string }];
  rejected: [{ role: 'assistant'; content: string }];
  margin: number;
  meta: Meta;
}

export interface PpoRow {
  prompt: ChatMessage[];
  completion: string;
  reward: number;
  return: number;
  token_ids: number[] | null;
  logprobs: number[] | null;
  meta: Meta;
}

export type DatasetRow = SftRow | GrpoRow | DpoRow | PpoRow;

/** Receives rows in output order. */
export type RowSink = (row: DatasetRow, info: RowInfo) => void;

export interface BuilderContext {
  options: DatasetOptions;
  stats: StatsCollector;
  reader: TraceReader;
  /** Offline GRPO: which weights served an agent in a rollout, against the start weights (none: no check). */
  policy?: PolicyCheck;
}

/**
 * One algorithm's builder: sees every completed rollout once, oldest first, and emits rows as soon as
 * it can (sft, ppo) or at the end (grpo groups and cross-rollout dpo pairs span rollouts).
 */
export interface DatasetBuilder {
  add(view: RolloutIndex, emit: RowSink): void;
  finish(emit: RowSink): void;
  /** SFT select verified, DPO pairs correctness: the hard tasks seen (see augment.ts). */
  hardTasks?(): HardTask[];
  /** Takes the verified answers asked for its hard tasks, before finish (absent: they are emitted as SFT rows). */
  augmented?(rows: readonly AugmentRow[]): void;
}

export type AugmentSource = 'rationalized' | 'teacher';

/** A verified reply for a hard task, to become a row (or a DPO chosen answer) under the task's recorded prompt. */
export interface AugmentRow {
  hard: HardTask;
  completion: string;
  source: AugmentSource;
  /** The config model that wrote it. */
  model: string;
}

/**
 * A hard task of an SFT build (select verified) or a DPO build (pairs correctness): a train-split task with a
 * reference whose candidates were all verified wrong. It carries the task's prompt as the builder's rows have it
 * (SFT: the first recorded prompt, as the agent saw it), so that what is added for it looks like the other rows.
 */
export interface HardTask {
  task: Task & { reference: string };
  messages: ChatMessage[];
  /** The recorded request offered tool specs (native tool mode): its replies would be tool calls. */
  tools: boolean;
  temperature?: number;
  /** The recorded request's completion cap: a reply asked for again gets the same. */
  maxTokens?: number;
  agent: string | null;
  meta: Meta;
  clean: boolean;
  category: string;
  rolloutId: string;
}
