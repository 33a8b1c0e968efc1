import { UserError } from '../../errors.js';
import { latestCandidate, resolveSet, type SetSpec } from '../../evaluation/candidates.js';
import type { Comparison, MetricName } from '../../evaluation/compare.js';
import type { LevelComparison } from '../../evaluation/forgetting.js';
import type { GateCheck } from '../../evaluation/gates.js';
import type { Interval } from '../../evaluation/stats.js';
import { describeMembers } from '../../resources/sets.js';
import type { PairedProgress } from '../../rollouts/paired.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { ResourceSet } from '../../store/index.js';
import { ResourceSetRepository } from '../../store/resource-sets.js';
import type { SuiteLevels } from '../../tasks/curriculum.js';
import { syncProduction } from '../production-sync.js';
import type { EvalLook } from './looks.js';

export interface EvaluateOptions {
  /** A set, checkpoint, resource:NAME@V or PROMPT@V, or a set's id (default: the newest trained candidate). */
  candidate?: SetSpec;
  /** Default: production. */
  baseline?: SetSpec;
  /** tasks: orchestrations of tasks; gateway: a replay of held-out captured calls (default eval.source). */
  source?: 'tasks' | 'gateway';
  /** A built-in suite or a task file, instead of eval.tasks / tasks.sources. */
  tasks?: string;
  split?: 'train' | 'eval' | 'all';
  /** Tasks, or with source gateway captured calls (default eval.replay.max_prompts). */
  n?: number;
  seeds?: number;
  concurrency?: number;
  trigger?: 'cli' | 'loop';
  signal?: AbortSignal;
  onStage?: (message: string) => void;
  onProgress?: (p: PairedProgress) => void;
}

export interface SetSummary {
  id: string;
  version: number;
  origin: Record<string, unknown>;
  agents: { agent: string; prompt: string; weights: string }[];
}

/** What a replay of captured calls (eval.source gateway) adds to its summary. */
export interface ReplaySummary {
  /** Captured calls replayed (each on every seed). */
  prompts: number;
  /** Pairs scored by the judge, and by the reward families against a reference. */
  judged: number;
  referenced: number;
  /** Candidate wins, losses and ties over every pair (a reference pair by its reward difference). */
  wins: number;
  losses: number;
  ties: number;
  /** Share of judged pairs whose two orders named the same winner (null: nothing judged). */
  agreement: number | null;
  /** The candidate's mean judged score (1 win, 0.5 tie, 0 loss), with its bootstrap interval; 0.5 is even. */
  winRate: Interval | null;
  /** Judged pairs where an order got no usable verdict, and pairs where a side failed to answer. */
  judgeFailures: number;
  answerFailures: number;
  judgeModel: string | null;
}

export interface EvalSummary {
  evalRunId: string;
  status: 'completed' | 'cancelled';
  /** What was evaluated: task orchestrations, or captured gateway calls replayed. */
  source: 'tasks' | 'gateway';
  baseline: SetSummary;
  candidate: SetSummary;
  tasks: number;
  seeds: number[];
  /** Orchestrations (or replayed calls) run now, and results reused from earlier evaluations. */
  measured: number;
  reused: number;
  metric: MetricName;
  comparison: Comparison;
  /** Per built-in suite and level (suite@level) in the evaluation, the paired comparison; none for task files. */
  levels?: LevelComparison[];
  gates: GateCheck[];
  /** Every deploy gate passes. */
  passed: boolean;
  wallMs: number;
  replay?: ReplaySummary;
  /** eval.sequential.max_looks above 1: each look's seeds, pairs and interval, the last deciding. */
  looks?: EvalLook[];
  /** tasks.curriculum on: each suite's level, and the paired comparison on each level below it. */
  curriculum?: { levels: SuiteLevels; lowerLevels: LevelComparison[] };
}

/** The baseline and the candidate an evaluation compares, refused when they serve the same. */
export function evalSets(rt: Runtime, opts: EvaluateOptions): { baseline: ResourceSet; candidate: ResourceSet } {
  const production = syncProduction(rt, opts.trigger ?? 'cli');
  const ctx = rt.setContext();
  const baseline = resolveSet(ctx, production, opts.baseline ?? 'production', '--baseline');
  const candidate = opts.candidate
    ? resolveSet(ctx, production, opts.candidate, '--candidate')
    : latestCandidate(ctx, production);
  if (ResourceSetRepository.servingHash(candidate.members) === ResourceSetRepository.servingHash(baseline.members)) {
    throw new UserError(
      `the candidate (set v${candidate.version}) serves exactly what the baseline (set v${baseline.version}) serves: nothing to compare`,
    );
  }
  return { baseline, candidate };
}

export function describeSet(rt: Runtime, set: ResourceSet): SetSummary {
  return { id: set.id, version: set.version, origin: set.origin, agents: describeMembers(rt.store(), set.members) };
}

export function seedList(count: number): number[] {
  if (!Number.isInteger(count) || count < 1 || count > 100)
    throw new UserError(`--seeds ${count}: expected a whole number from 1 to 100`);
  return Array.from({ length: count }, (_, i) => i + 1);
}
