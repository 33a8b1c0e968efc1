import { z } from 'zod';
import { METRICS } from '../evaluation/compare.js';
import type { EvalRun } from '../store/index.js';

// The evaluation summary as stored in eval_runs.summary (pipeline/evaluate/evaluate.ts writes it). Read leniently:
// a report of an older or partial summary shows what it can instead of failing.
const num = z.number().nullable().catch(null);
const interval = z
  .object({ mean: z.number(), low: z.number(), high: z.number(), level: z.number().catch(0.95) })
  .nullable()
  .catch(null);
const metric = z.object({
  metric: z.enum(METRICS),
  n: z.number().catch(0),
  baseline: num,
  candidate: num,
  diff: interval,
  counts: z.object({ wins: z.number(), ties: z.number(), losses: z.number() }).catch({ wins: 0, ties: 0, losses: 0 }),
  test: z.string().catch('sign'),
  pValue: num,
});
const metrics = z
  .array(z.unknown())
  .catch([])
  .transform((xs) =>
    xs.flatMap((x) => {
      const m = metric.safeParse(x);
      return m.success ? [m.data] : [];
    }),
  );
const set = z
  .object({
    id: z.string(),
    version: num,
    agents: z
      .array(z.object({ agent: z.string(), prompt: z.string().catch('—'), weights: z.string().catch('—') }))
      .catch([]),
  })
  .nullable()
  .catch(null);
const gate = z.object({
  gate: z.string(),
  passed: z.boolean(),
  value: num,
  threshold: num,
  detail: z.string().catch(''),
});

const side = z.object({ reward: num, success: num }).catch({ reward: null, success: null });
/** The paired comparison per built-in suite and level (absent in evaluations stored before it was kept). */
const level = z.object({
  suite: z.string(),
  level: z.number(),
  pairs: z.number().catch(0),
  baseline: side,
  candidate: side,
});

const summarySchema = z.object({
  baseline: set,
  candidate: set,
  tasks: num,
  seeds: z.array(z.number()).catch([]),
  measured: num,
  reused: num,
  metric: z.enum(METRICS).catch('reward'),
  comparison: z.object({
    pairs: z.number().catch(0),
    overall: metrics,
    categories: z.array(z.object({ category: z.string(), pairs: z.number().catch(0), metrics })).catch([]),
  }),
  gates: z.array(gate).catch([]),
  levels: z
    .array(z.unknown())
    .catch([])
    .transform((xs) => xs.flatMap((x) => level.safeParse(x).data ?? [])),
  /** tasks.curriculum on: each suite's current level when the evaluation ran. */
  curriculum: z
    .object({ levels: z.record(z.string(), z.number()) })
    .nullable()
    .catch(null)
    .optional(),
  passed: z.boolean().nullable().catch(null),
  wallMs: num,
  source: z.enum(['tasks', 'gateway']).catch('tasks'),
  replay: z
    .object({
      prompts: z.number().catch(0),
      judged: z.number().catch(0),
      referenced: z.number().catch(0),
      wins: z.number().catch(0),
      losses: z.number().catch(0),
      ties: z.number().catch(0),
      agreement: num,
      winRate: interval,
      judgeFailures: z.number().catch(0),
      answerFailures: z.number().catch(0),
      judgeModel: z.string().nullable().catch(null),
    })
    .nullable()
    .catch(null),
});

export type StoredMetric = z.infer<typeof metric>;
export type StoredLevel = z.infer<typeof level>;
export type StoredSummary = z.infer<typeof summarySchema>;

/** One evaluation run with its stored summary, when the summary has a comparison to show. */
export interface StoredEvaluation {
  id: string;
  status: string;
  trigger: string;
  startedAt: number;
  finishedAt: number | null;
  baselineSet: string;
  candidateSet: string;
  summary: StoredSummary;
}

export function readEvaluation(run: EvalRun): StoredEvaluation | null {
  const parsed = summarySchema.safeParse(run.summary);
  if (!parsed.success) return null;
  return {
    id: run.id,
    status: run.status,
    trigger: run.trigger,
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
    baselineSet: run.baselineSet,
    candidateSet: run.candidateSet,
    summary: parsed.data,
  };
}

/** A metric of the comparison over all pairs. */
export function overall(s: StoredSummary, name: StoredMetric['metric']): StoredMetric | undefined {
  return s.comparison.overall.find((m) => m.metric === name);
}
