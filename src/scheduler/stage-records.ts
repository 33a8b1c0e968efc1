import { z } from 'zod';
import type { LOOP_STEPS } from '../config/schema.js';
import { STAGE_PROFILE } from '../util/stage-profile.js';

export type Stage = (typeof LOOP_STEPS)[number];

// Every field past the status is optional: a running, failed or cancelled stage has only what it saved.
const base = {
  status: z.enum(['running', 'done', 'skipped', 'failed', 'cancelled']),
  started_at: z.number(),
  finished_at: z.number().optional(),
  /** Why it was skipped, failed or stopped (or where a result was taken from). */
  reason: z.string().optional(),
  /** Where the stage's time went (util/stage-profile.ts); none before it, and one of another shape is dropped. */
  profile: STAGE_PROFILE.optional().catch(undefined),
};
// A number stored as JSON may come back null (NaN and Infinity are written so).
const num = z.number().nullable().optional();
const setId = z.string().nullable().optional();

const collect = z.object({
  ...base,
  run_id: z.string().optional(),
  tasks: num,
  completed: num,
  failed: num,
  mean_reward: num,
  tokens: num,
  /** The production set's version that served the run. */
  set: num,
  on_workers: z.boolean().optional(),
  /**
   * collect.source gateway: the captured sessions taken, held out (gateway.holdout), waiting for a reward (no_majority:
   * agreement found none for them; absent in records written before it).
   */
  captured: z
    .object({ taken: num, held_out: num, waiting: num, joined: num, scored: num, no_majority: num })
    .optional(),
  /** Written by versions whose collect reviewed production; the review stage holds these now. */
  canary: z.string().nullable().optional(),
  watch: z.string().nullable().optional(),
});

const review = z.object({
  ...base,
  canary: z.enum(['waiting', 'advanced', 'promoted', 'rolled back', 'stopped', 'running']).nullable().optional(),
  watch: z.enum(['waiting', 'held', 'rolled back']).nullable().optional(),
  /** The gates or the comparison behind the verdicts. */
  detail: z.string().optional(),
});

/** A role of config `roles` in the train stage: training (its run, to resume), trained or skipped (why). */
const roleTrained = z.object({
  role: z.string(),
  status: z.enum(['running', 'trained', 'skipped']),
  reason: z.string().optional(),
  training_run_id: z.string().optional(),
  checkpoint_id: z.string().optional(),
});

const train = z.object({
  ...base,
  training_run_id: z.string().optional(),
  checkpoint_id: z.string().optional(),
  weights: z.string().optional(),
  candidate_set: setId,
  steps: num,
  final_loss: num,
  roles: z.array(roleTrained).optional(),
});

const promptOpt = z.object({
  ...base,
  training_run_id: z.string().optional(),
  candidate_set: setId,
  best: z.string().nullable().optional(),
  best_mean: num,
  baseline_mean: num,
  rollouts: num,
  optimizer_tokens: num,
});

const interval = z.object({ mean: num, low: num, high: num, level: num, resamples: num });
/** A changed role's own effect: its leave-one-in set against the baseline. */
const roleCredit = z.object({
  role: z.string(),
  set: num,
  eval_run_id: z.string().optional(),
  passed: z.boolean().nullable(),
  diff: interval.nullable().optional(),
  failed_gates: z.array(z.string()).optional(),
});
const evaluation = z.object({
  ...base,
  eval_run_id: z.string().optional(),
  candidate_set: z.string().optional(),
  baseline_set: z.string().optional(),
  passed: z.boolean().optional(),
  metric: z.string().optional(),
  baseline: num,
  candidate: num,
  diff: interval.nullable().optional(),
  failed_gates: z.array(z.string()).optional(),
  /** With roles: each changed role's own effect, the team's candidate, and the roles deploy promotes. */
  roles: z.array(roleCredit).optional(),
  team_set: setId,
  promoted_roles: z.array(z.string()).optional(),
  /** The HTML report, written once the cycle is decided. */
  report: z.string().optional(),
});

const gate = z.object({ gate: z.string(), passed: z.boolean(), detail: z.string() });
const deploy = z.object({
  ...base,
  action: z.enum(['promoted', 'forced', 'canary started', 'not promoted']).optional(),
  audit_id: z.number().nullable().optional(),
  eval_run_id: z.string().nullable().optional(),
  gates: z.array(gate).optional(),
});

/** What each stage saves in the cycle, checked when a stored cycle is read back. */
export const STAGE_RECORDS = {
  collect,
  review,
  train,
  prompt_opt: promptOpt,
  eval: evaluation,
  deploy,
} satisfies Record<Stage, z.ZodType>;

/** What every stage's record holds. */
export type StageBase = z.infer<z.ZodObject<typeof base>>;
export type StageRecords = { [S in Stage]: z.infer<(typeof STAGE_RECORDS)[S]> };
export type StageRecord<S extends Stage = Stage> = StageRecords[S];
/** What a stage returns: its record without the start time, which the loop sets. */
export type StageResult<S extends Stage> = Omit<StageRecord<S>, 'started_at'>;

/** What a running stage of a cycle is given. */
export interface StageContext<S extends Stage> {
  signal: AbortSignal;
  note(message: string): void;
  /** Persists fields of the running stage at once (a training run's id, so a crash can resume it). */
  save(fields: Partial<StageRecord<S>>): void;
}

/** A cycle saved before prompt optimization's stage was prompt_opt: its `apo` record, with apo_run_id. */
function renamedStages(stages: unknown): unknown {
  if (typeof stages !== 'object' || stages === null || !('apo' in stages)) return stages;
  const { apo, ...rest } = stages as { apo: unknown };
  if (typeof apo !== 'object' || apo === null) return rest;
  const { apo_run_id: runId, ...record } = apo as { apo_run_id?: unknown };
  return { prompt_opt: { ...record, ...(runId === undefined ? {} : { training_run_id: runId }) }, ...rest };
}

export const CYCLE_STATE = z.object({
  cycle: z.number(),
  started_at: z.number(),
  /** How many times an interrupted cycle was taken up again. */
  resumed: z.number().default(0),
  stages: z.preprocess(
    renamedStages,
    z.object({
      collect: collect.optional(),
      review: review.optional(),
      train: train.optional(),
      prompt_opt: promptOpt.optional(),
      eval: evaluation.optional(),
      deploy: deploy.optional(),
    }),
  ),
  outcome: z.string().optional(),
  /** How each earlier attempt of a resumed cycle ended (failed or stopped), oldest first. */
  earlier: z.array(z.object({ at: z.number(), outcome: z.string() })).default([]),
});

/** A loop cycle as persisted in loop_runs.state after every stage change (CYCLE_STATE's shape). */
export type CycleState = {
  cycle: number;
  started_at: number;
  resumed: number;
  stages: Partial<StageRecords>;
  outcome?: string;
  earlier?: { at: number; outcome: string }[];
};
