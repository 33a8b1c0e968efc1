import type { RolloutSummary } from '../../rollouts/rollout.js';
import type { Shortfall } from '../../tasks/for-run.js';
import type { CurriculumUpdate } from './curriculum.js';

export interface CollectOptions {
  /** A built-in suite name or a task file; replaces tasks.sources. */
  tasks?: string;
  n?: number;
  concurrency?: number;
  split?: 'train' | 'eval' | 'all';
  signal?: AbortSignal;
  onProgress?: (p: CollectProgress) => void;
  onStage?: (message: string) => void;
  trigger?: 'collect' | 'loop';
  /** Overrides collect.source: orchestrate runs tasks, gateway takes captured sessions (collect-captured.ts). */
  source?: 'orchestrate' | 'gateway';
}

export interface CollectProgress {
  total: number;
  done: number;
  failed: number;
  cancelled: number;
  running: number;
  elapsedMs: number;
  etaMs: number | null;
  last?: RolloutSummary;
}

export interface CollectSummary {
  runId: string;
  status: 'completed' | 'cancelled';
  tasks: number;
  completed: number;
  failed: number;
  cancelled: number;
  /** Completed share of all tasks. */
  successRate: number;
  /** Share of scored rollouts whose final answer matched the reference (exact or numeric), or null. */
  correctRate: number | null;
  meanReward: number | null;
  consensusRate: number | null;
  meanRounds: number | null;
  tokens: number;
  wallMs: number;
  /** The production resource set that served the run, and the canary's when one ran. */
  resourceSet: { id: string; version: number };
  canary: { id: string; version: number; fraction: number; rollouts: number } | null;
  /** Why rollouts failed: each distinct error with how many rollouts it ended, most frequent first. */
  failureReasons: { error: string; count: number }[];
  /** n asked for more tasks than the split holds: all of the split ran, and this says so. */
  shortfall: Shortfall | null;
  rollouts: RolloutSummary[];
  /** tasks.curriculum on: the results recorded at the suites' levels and the suites that moved up. */
  curriculum?: CurriculumUpdate;
  /** collect.source gateway: what it took from the captured sessions (absent for orchestrated runs). */
  source?: 'gateway';
  captured?: CapturedCounts;
}

/** What a `collect.source: gateway` run did with the captured sessions it looked at. */
export interface CapturedCounts {
  /** The watermark it started from (epoch ms; null: the first such run, which looks at every session). */
  since: number | null;
  /** The watermark the next run starts from. */
  watermark: number;
  /** Sessions made training data. */
  taken: number;
  /** In the gateway.holdout share: never training data. */
  heldOut: number;
  /** Joined into an imported MassGen run (traces import --massgen-logs), which is training data already. */
  joined: number;
  /** Without a reward and no judge to score them: offered again once feedback reaches them. */
  waiting: number;
  /**
   * Without a reward, and agreement (the only family that scored) found no majority among the completions of their
   * prompt in this run: like waiting, offered again once feedback reaches them.
   */
  noMajority: number;
  /** Scored in this run by the judge, agreement or rewards.custom (and taken). */
  scored: number;
  /** Taken with the reward they already had (feedback, or an earlier judge). */
  rewarded: number;
}
