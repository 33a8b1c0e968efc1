import { UserError } from '../../errors.js';
import { compare, primaryMetric, type Pair } from '../../evaluation/compare.js';
import { forgettingGate, levelComparisons, lowerLevels } from '../../evaluation/forgetting.js';
import { categoryRule, checkGates, gatesPass } from '../../evaluation/gates.js';
import { settingsHash, taskHash } from '../../evaluation/keys.js';
import { batchFilling } from '../../rollouts/batch-fill.js';
import { runPairs } from '../../rollouts/paired.js';
import { onePerDecision, checkTeamInputs, setupTeam } from '../../rollouts/team.js';
import type { Runtime } from '../../runtime/runtime.js';
import { tasksForRun } from '../../tasks/for-run.js';
import { createToolRunner } from '../../tools/runner.js';
import { suiteLevels } from '../collect/curriculum.js';
import { measureOnWorkers } from './queue.js';
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
  const seeds = seedList(opts.seeds ?? e.seeds);
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
    seeds,
    task_ids: tasks.map((t) => t.id),
  };
  const evalRunId = store.evaluations.startRun(baseline.id, candidate.id, params, opts.trigger ?? 'cli');
  const signal = opts.signal ?? new AbortController().signal;
  opts.onStage?.(`evaluating on ${tasks.length} task(s) × ${seeds.length} seed(s) (eval ${evalRunId})`);
  try {
    const hashed = tasks.map((task) => ({ task, hash: taskHash(task) }));
    const settings = settingsHash(config);
    if (config.queue.distributed) {
      await measureOnWorkers(rt, {
        evalRunId,
        baseline,
        candidate,
        tasks: hashed,
        seeds,
        settingsHash: settings,
        signal,
        onStage: opts.onStage,
      });
    }
    const results = await runPairs({
      store,
      evalRunId,
      config,
      tools: createToolRunner(config.tools, rt.paths.baseDir),
      baseline: baseTeam,
      candidate: candTeam,
      tasks: hashed,
      seeds,
      settingsHash: settings,
      concurrency: opts.concurrency ?? e.concurrency ?? batchFilling(config, config.collect.concurrency),
      signal,
      onProgress: opts.onProgress,
    });
    const metric = primaryMetric(e.metric);
    const pairs = pairUp(results.baseline, results.candidate);
    const comparison = compare(pairs, e.bootstrap);
    const gates = checkGates(comparison, metric, config.deploy.gates);
    let curriculum: EvalSummary['curriculum'];
    if (levels) {
      curriculum = { levels, lowerLevels: lowerLevels(pairs, levels, e.bootstrap) };
      gates.push(forgettingGate(curriculum.lowerLevels, metric, categoryRule(config.deploy.gates)));
    }
    const summary: EvalSummary = {
      evalRunId,
      status: results.cancelled ? 'cancelled' : 'completed',
      source: 'tasks',
      baseline: describeSet(rt, baseline),
      candidate: describeSet(rt, candidate),
      tasks: tasks.length,
      seeds,
      measured: results.measured,
      reused: results.reused,
      metric,
      comparison,
      levels: levelComparisons(pairs, e.bootstrap),
      gates,
      passed: !results.cancelled && gatesPass(gates),
      wallMs: performance.now() - started,
      ...(curriculum ? { curriculum } : {}),
    };
    store.evaluations.finishRun(evalRunId, summary.status, summary as unknown as Record<string, unknown>);
    return summary;
  } catch (err) {
    store.evaluations.finishRun(evalRunId, 'failed', null, (err as Error).message);
    throw err;
  }
}

function pairUp(baseline: { taskHash: string; seed: number }[], candidate: Pair['candidate'][]): Pair[] {
  const key = (r: { taskHash: string; seed: number }) => `${r.taskHash}:${r.seed}`;
  const cand = new Map(candidate.map((r) => [key(r), r]));
  return (baseline as Pair['baseline'][]).flatMap((b) => {
    const c = cand.get(key(b));
    return c
      ? [{ taskId: b.taskId, category: b.category ?? 'uncategorized', seed: b.seed, baseline: b, candidate: c }]
      : [];
  });
}
