import { UserError } from '../errors.js';
import { latestCandidate, resolveSet } from '../evaluation/candidates.js';
import { compare, primaryMetric, type Comparison, type MetricName, type Pair } from '../evaluation/compare.js';
import { checkGates, gatesPass, type GateCheck } from '../evaluation/gates.js';
import { settingsHash, taskHash } from '../evaluation/keys.js';
import { describeMembers } from '../resources/sets.js';
import { runPairs, type PairedProgress } from '../rollouts/paired.js';
import { onePerDecision, checkTeamInputs, setupTeam } from '../rollouts/team.js';
import type { Runtime } from '../runtime/runtime.js';
import type { ResourceSet } from '../store/index.js';
import { ResourceSetRepository } from '../store/resource-sets.js';
import { tasksForRun } from '../tasks/for-run.js';
import { createToolRunner } from '../tools/runner.js';
import { measureOnWorkers } from './eval-queue.js';

export interface EvaluateOptions {
  /** A set, checkpoint, resource:NAME@V or PROMPT@V (default: the newest trained candidate). */
  candidate?: string;
  /** Default: production. */
  baseline?: string;
  /** A built-in suite or a task file, instead of eval.tasks / tasks.sources. */
  tasks?: string;
  split?: 'train' | 'eval' | 'all';
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

export interface EvalSummary {
  evalRunId: string;
  status: 'completed' | 'cancelled';
  baseline: SetSummary;
  candidate: SetSummary;
  tasks: number;
  seeds: number[];
  /** Orchestrations run now, and results reused from earlier evaluations. */
  measured: number;
  reused: number;
  metric: MetricName;
  comparison: Comparison;
  gates: GateCheck[];
  /** Every deploy gate passes. */
  passed: boolean;
  wallMs: number;
}

/**
 * Real orchestrations of baseline and candidate on the same tasks and sampling seeds, interleaved;
 * every result stored (set × task × seed), the paired comparison and the deploy gates computed.
 */
export async function evaluate(rt: Runtime, opts: EvaluateOptions = {}): Promise<EvalSummary> {
  const started = performance.now();
  const { config } = rt;
  const e = config.eval;
  const split = opts.split ?? e.split;
  const tasks = tasksForRun(config.tasks, rt.paths.baseDir, { spec: opts.tasks ?? e.tasks, n: opts.n ?? e.n, split });
  if (!tasks.length)
    throw new UserError(
      `no ${split === 'all' ? '' : `${split}-split `}tasks to evaluate on`,
      'check tasks.sources and tasks.split.eval_fraction, or pass --tasks or --split all',
    );
  const seedCount = opts.seeds ?? e.seeds;
  if (!Number.isInteger(seedCount) || seedCount < 1 || seedCount > 100)
    throw new UserError(`--seeds ${seedCount}: expected a whole number from 1 to 100`);
  checkTeamInputs(rt);
  const store = rt.store();
  const production = rt.production(opts.trigger ?? 'cli');
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
  opts.onStage?.(`starting the baseline (set v${baseline.version}) and candidate (set v${candidate.version}) teams`);
  const [baseTeam, candTeam] = [
    onePerDecision(await setupTeam(rt, baseline, 'eval')),
    onePerDecision(await setupTeam(rt, candidate, 'eval')),
  ];
  store.tasks.upsertMany(tasks);
  const seeds = Array.from({ length: seedCount }, (_, i) => i + 1);
  const params = {
    tasks: opts.tasks ?? e.tasks ?? config.tasks.sources,
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
      concurrency: opts.concurrency ?? e.concurrency ?? config.collect.concurrency,
      signal,
      onProgress: opts.onProgress,
    });
    const metric = primaryMetric(e.metric);
    const comparison = compare(pairUp(results.baseline, results.candidate), e.bootstrap);
    const gates = checkGates(comparison, metric, config.deploy.gates);
    const summary: EvalSummary = {
      evalRunId,
      status: results.cancelled ? 'cancelled' : 'completed',
      baseline: describe(rt, baseline),
      candidate: describe(rt, candidate),
      tasks: tasks.length,
      seeds,
      measured: results.measured,
      reused: results.reused,
      metric,
      comparison,
      gates,
      passed: !results.cancelled && gatesPass(gates),
      wallMs: performance.now() - started,
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

function describe(rt: Runtime, set: ResourceSet): SetSummary {
  return { id: set.id, version: set.version, origin: set.origin, agents: describeMembers(rt.store(), set.members) };
}
