import { UserError } from '../../errors.js';
import { primaryMetric } from '../../evaluation/compare.js';
import { levelComparisons } from '../../evaluation/forgetting.js';
import { settingsHash, taskHash } from '../../evaluation/keys.js';
import { batchFilling } from '../../rollouts/batch-fill.js';
import { onePerDecision, checkTeamInputs, setupTeam } from '../../rollouts/team.js';
import type { Runtime } from '../../runtime/runtime.js';
import { tasksForRun } from '../../tasks/for-run.js';
import { createToolRunner } from '../../tools/runner.js';
import { suiteLevels } from '../collect/curriculum.js';
import { measureLooks } from './looks.js';
import { evaluateReplay } from './replay.js';
import { describeSet, evalSets, seedList, type EvalSummary, type EvaluateOptions } from './sets.js';

export type { EvalSummary, EvaluateOptions, ReplaySummary, SetSummary } from './sets.js';

/**
 * Real orchestrations of baseline and candidate on the same tasks and sampling seeds, interleaved;
 * every result stored (set × task × seed), the paired comparison and the deploy gates computed.
 */
export async function evaluate(rt: Runtime, opts: EvaluateOptions = {}): Promise<EvalSummary> {
  const started = performance.now();
  const { config } = rt;
  const e = config.eval;
  if ((opts.source ?? e.source) === 'gateway') return evaluateReplay(rt, opts);
  const split = opts.split ?? e.split;
  const spec = opts.tasks ?? e.tasks;
  // The curriculum evaluates every level up to each suite's current one, so that the gates see forgetting.
  const levels = config.tasks.curriculum.enabled && !spec ? suiteLevels(rt) : null;
  const tasks = tasksForRun(config.tasks, rt.paths.baseDir, {
    spec,
    n: opts.n ?? e.n,
    split,
    ...(levels ? { curriculum: { levels, purpose: 'eval' } } : {}),
  });
  if (!tasks.length)
    throw new UserError(
      `no ${split === 'all' ? '' : `${split}-split `}tasks to evaluate on`,
      'check tasks.sources and tasks.split.eval_fraction, or pass --tasks or --split all',
    );
  const seedsPerLook = seedList(opts.seeds ?? e.seeds);
  checkTeamInputs(rt);
  const store = rt.store();
  rt.followTelemetry(opts.onStage);
  const { baseline, candidate } = evalSets(rt, opts);
  opts.onStage?.(`starting the baseline (set v${baseline.version}) and candidate (set v${candidate.version}) teams`);
  const [baseTeam, candTeam] = [
    onePerDecision(await setupTeam(rt, baseline, 'eval')),
    onePerDecision(await setupTeam(rt, candidate, 'eval')),
  ];
  store.tasks.upsertMany(tasks);
  const params = {
    tasks: spec ?? config.tasks.sources,
    ...(levels ? { curriculum_levels: levels } : {}),
    split,
    n: tasks.length,
    seeds: seedsPerLook,
    ...(e.sequential.max_looks > 1 ? { sequential: e.sequential } : {}),
    task_ids: tasks.map((t) => t.id),
  };
  const evalRunId = store.evaluations.startRun(baseline.id, candidate.id, params, opts.trigger ?? 'cli');
  const signal = opts.signal ?? new AbortController().signal;
  opts.onStage?.(`evaluating on ${tasks.length} task(s) × ${seedsPerLook.length} seed(s) (eval ${evalRunId})`);
  try {
    const r = await measureLooks(rt, {
      evalRunId,
      store,
      config,
      tools: createToolRunner(config.tools, rt.paths.baseDir),
      baseline: baseTeam,
      candidate: candTeam,
      tasks: tasks.map((task) => ({ task, hash: taskHash(task) })),
      seedsPerLook: seedsPerLook.length,
      metric: primaryMetric(e.metric),
      levels,
      settingsHash: settingsHash(config),
      concurrency: opts.concurrency ?? e.concurrency ?? batchFilling(config, config.collect.concurrency),
      signal,
      onStage: opts.onStage,
      onProgress: opts.onProgress,
    });
    const summary: EvalSummary = {
      evalRunId,
      status: r.cancelled ? 'cancelled' : 'completed',
      source: 'tasks',
      baseline: describeSet(rt, baseline),
      candidate: describeSet(rt, candidate),
      tasks: tasks.length,
      seeds: r.seeds,
      measured: r.measured,
      reused: r.reused,
      metric: primaryMetric(e.metric),
      comparison: r.comparison,
      levels: levelComparisons(r.pairs, e.bootstrap),
      gates: r.gates,
      passed: r.looks.at(-1)!.passed,
      wallMs: performance.now() - started,
      ...(e.sequential.max_looks > 1 ? { looks: r.looks } : {}),
      ...(levels && r.lowerLevels ? { curriculum: { levels, lowerLevels: r.lowerLevels } } : {}),
    };
    store.evaluations.finishRun(evalRunId, summary.status, summary as unknown as Record<string, unknown>);
    return summary;
  } catch (err) {
    store.evaluations.finishRun(evalRunId, 'failed', null, (err as Error).message);
    throw err;
  }
}
