import fs from 'node:fs';
import path from 'node:path';
import { BUILTIN_SUITES, MAX_TASKS, type RLConfig } from '../config/schema.js';
import { UserError } from '../errors.js';
import { runRollout, type RolloutSummary } from '../rollouts/rollout.js';
import { setupTeam } from '../rollouts/team.js';
import type { Runtime } from '../runtime/runtime.js';
import { loadTasks, selectTasks } from '../tasks/index.js';
import { createToolRunner } from '../tools/runner.js';

export interface CollectOptions {
  /** A built-in suite name or a task file; replaces tasks.sources. */
  tasks?: string;
  n?: number;
  concurrency?: number;
  split?: 'train' | 'eval' | 'all';
  signal?: AbortSignal;
  onProgress?: (p: CollectProgress) => void;
  onStage?: (message: string) => void;
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
  /** Why rollouts failed: each distinct error with how many rollouts it ended, most frequent first. */
  failureReasons: { error: string; count: number }[];
  /** n asked for more tasks than the split holds: all of the split ran, and this says so. */
  shortfall: { requested: number; available: number; split: 'train' | 'eval' | 'all'; hint: string } | null;
  rollouts: RolloutSummary[];
}

/** Runs tasks through the agent team, concurrently, recording and scoring every orchestration. */
export async function collect(rt: Runtime, opts: CollectOptions = {}): Promise<CollectSummary> {
  const { config } = rt;
  const split = opts.split ?? config.collect.split;
  const n = opts.n ?? config.collect.n;
  const loaded = loadTasks(tasksConfig(config.tasks, opts.tasks, n, split), rt.paths.baseDir);
  const tasks = selectTasks(loaded, split, n);
  const shortfall = n !== undefined && tasks.length < n ? shortfallOf(n, tasks.length, split, loaded.length) : null;
  if (!tasks.length) throw new UserError(`no ${split === 'all' ? '' : `${split}-split `}tasks to run`, 'check tasks.sources and tasks.split.eval_fraction, or pass --split all');
  const concurrency = opts.concurrency ?? config.collect.concurrency;
  const signal = opts.signal ?? new AbortController().signal;
  const setup = await setupTeam(rt);
  const store = rt.store();
  store.tasks.upsertMany(tasks);
  if (shortfall) opts.onStage?.(shortfall.hint);
  opts.onStage?.(`starting ${tasks.length} orchestration(s), ${concurrency} at a time`);
  const runId = store.collectRuns.start({ tasks: opts.tasks ?? config.tasks.sources, n: tasks.length, concurrency, split }, { config_hash: rt.loaded.hash });
  const started = performance.now();
  const done: RolloutSummary[] = [];
  const tools = createToolRunner(config.tools, rt.paths.baseDir);
  await pool(tasks, concurrency, signal, async (task) => {
    const summary = await runRollout(task, { store, runId, setup, config, tools, signal });
    done.push(summary);
    opts.onProgress?.(progress(done, tasks.length, started, summary));
  });
  const summary = { ...summarize(runId, tasks.length, done, performance.now() - started, signal.aborted), shortfall };
  store.collectRuns.finish(runId, summary.status, { ...summary, rollouts: undefined });
  return summary;
}

function shortfallOf(requested: number, available: number, split: 'train' | 'eval' | 'all', total: number): NonNullable<CollectSummary['shortfall']> {
  const more = split !== 'all' && total > available ? `; --split all runs all ${total} tasks` : '; add tasks to tasks.sources for more';
  return { requested, available, split, hint: `--n ${requested} asks for more tasks than the ${split === 'all' ? 'task sources hold' : `${split} split holds`} (${available}): running ${available}${more}` };
}

function tasksConfig(base: RLConfig['tasks'], spec: string | undefined, n: number | undefined, split: 'train' | 'eval' | 'all'): RLConfig['tasks'] {
  if (!spec) return base;
  if ((BUILTIN_SUITES as readonly string[]).includes(spec)) {
    // Generate enough that the requested split still holds n tasks after the hash split.
    const share = split === 'all' ? 1 : split === 'eval' ? base.split.eval_fraction : 1 - base.split.eval_fraction;
    const generated = Math.min(MAX_TASKS, Math.ceil(((n ?? 50) / Math.max(share, 0.05)) * 1.25) + 5);
    return { ...base, sources: [{ suite: spec as (typeof BUILTIN_SUITES)[number], n: generated, seed: 1 }] };
  }
  const file = path.resolve(spec);
  if (!fs.existsSync(file)) throw new UserError(`--tasks ${spec}: not a built-in suite (${BUILTIN_SUITES.join(', ')}) and no such file`);
  return { ...base, sources: [{ file }] };
}

/** Runs fn over items with at most `limit` in flight; stops taking new items once the signal aborts. */
async function pool<T>(items: T[], limit: number, signal: AbortSignal, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length && !signal.aborted) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

function progress(done: RolloutSummary[], total: number, started: number, last: RolloutSummary): CollectProgress {
  const elapsedMs = performance.now() - started;
  const count = (s: RolloutSummary['status']) => done.filter((d) => d.status === s).length;
  return {
    total, done: done.length, failed: count('failed'), cancelled: count('cancelled'), running: 0, elapsedMs,
    etaMs: done.length ? (elapsedMs / done.length) * (total - done.length) : null, last,
  };
}

function summarize(runId: string, total: number, rollouts: RolloutSummary[], wallMs: number, interrupted: boolean): Omit<CollectSummary, 'shortfall'> {
  const completed = rollouts.filter((r) => r.status === 'completed');
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
  const scored = completed.filter((r) => r.quality !== null);
  return {
    runId, status: interrupted ? 'cancelled' : 'completed', tasks: total,
    completed: completed.length, failed: rollouts.filter((r) => r.status === 'failed').length,
    cancelled: rollouts.filter((r) => r.status === 'cancelled').length + (total - rollouts.length),
    successRate: total ? completed.length / total : 0,
    correctRate: scored.length ? scored.filter((r) => r.quality === 1).length / scored.length : null,
    meanReward: mean(completed.map((r) => r.reward).filter((x): x is number => x !== null)),
    consensusRate: mean(completed.map((r) => (r.consensus ? 1 : 0))),
    meanRounds: mean(completed.map((r) => r.rounds)),
    tokens: rollouts.reduce((a, r) => a + r.tokens, 0), wallMs, failureReasons: countReasons(rollouts), rollouts,
  };
}

function countReasons(rollouts: RolloutSummary[]): CollectSummary['failureReasons'] {
  const counts = new Map<string, number>();
  for (const r of rollouts) if (r.status === 'failed') counts.set(r.error ?? 'unknown error', (counts.get(r.error ?? 'unknown error') ?? 0) + 1);
  return [...counts].map(([error, count]) => ({ error, count })).sort((a, b) => b.count - a.count);
}

