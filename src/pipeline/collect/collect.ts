import { UserError } from '../../errors.js';
import { canary } from '../../resources/production.js';
import { complete } from '../../resources/sets.js';
import { StoreLockedStop } from '../../rollouts/locked-stop.js';
import { runRollout, type RolloutSummary } from '../../rollouts/rollout.js';
import { checkTeamInputs, setupTeam } from '../../rollouts/team.js';
import type { Runtime } from '../../runtime/runtime.js';
import { TaskConflictError } from '../../store/index.js';
import { tasksWithShortfall, type Shortfall } from '../../tasks/for-run.js';
import type { SplitSelector, SplitTask } from '../../tasks/types.js';
import { createToolRunner } from '../../tools/runner.js';
import { sha256 } from '../../util/hash.js';
import { pool } from '../../util/pool.js';
import { syncProduction } from '../production-sync.js';
import { collectCaptured } from './captured.js';
import { recordCurriculum, suiteLevels } from './curriculum.js';
import type { CollectOptions, CollectProgress, CollectSummary } from './types.js';

export type { CollectOptions, CollectProgress, CollectSummary } from './types.js';

/**
 * The tasks a collect run takes (tasks.sources or opts.tasks, n of the split), with the team's inputs and
 * the tasks checked against the store: everything before the first write, so a refused run changes nothing
 * (production and the team write prompt versions).
 */
export function tasksToCollect(
  rt: Runtime,
  opts: Pick<CollectOptions, 'tasks' | 'n' | 'split'>,
): { tasks: SplitTask[]; shortfall: Shortfall | null; split: SplitSelector } {
  const { config } = rt;
  const split = opts.split ?? config.collect.split;
  const { tasks, shortfall } = tasksWithShortfall(config.tasks, rt.paths.baseDir, {
    spec: opts.tasks,
    n: opts.n ?? config.collect.n,
    split,
    ...(config.tasks.curriculum.enabled ? { curriculum: { levels: suiteLevels(rt), purpose: 'collect' } } : {}),
  });
  if (!tasks.length)
    throw new UserError(
      `no ${split === 'all' ? '' : `${split}-split `}tasks to run`,
      'check tasks.sources and tasks.split.eval_fraction, or pass --split all',
    );
  checkTeamInputs(rt);
  if (rt.storeExists()) {
    const conflicts = rt.existingStore().tasks.conflicts(tasks);
    if (conflicts.length) throw new TaskConflictError(conflicts);
  }
  return { tasks, shortfall, split };
}

/**
 * Runs tasks through the agent team, concurrently, recording and scoring every orchestration (with
 * collect.source gateway it takes captured sessions instead: collect-captured.ts). It never
 * switches production: what the rollouts say about a canary or a deploy is the review stage's (review.ts).
 */
export async function collect(rt: Runtime, opts: CollectOptions = {}): Promise<CollectSummary> {
  const { config } = rt;
  if ((opts.source ?? config.collect.source) === 'gateway') return collectCaptured(rt, opts);
  const { tasks, shortfall, split } = tasksToCollect(rt, opts);
  const concurrency = opts.concurrency ?? config.collect.concurrency;
  const signal = opts.signal ?? new AbortController().signal;
  const store = rt.store();
  rt.followTelemetry(opts.onStage);
  const production = await setupTeam(rt, syncProduction(rt, opts.trigger ?? 'collect'));
  const trial = canary(store);
  const candidate =
    trial
    && (await setupTeam(
      rt,
      store.sets.add(
        complete(trial.set, production.set.members),
        { kind: 'candidate', completed_from: trial.set.id },
        trial.set.id,
      ),
    ));
  // Writes go through store.write: a store another process holds locked is retried, not a crash.
  await store.write(() => store.tasks.upsertMany(tasks));
  if (shortfall) opts.onStage?.(shortfall.hint);
  opts.onStage?.(`starting ${tasks.length} orchestration(s), ${concurrency} at a time`);
  const runId = await store.write(() =>
    store.collectRuns.start(
      { tasks: opts.tasks ?? config.tasks.sources, n: tasks.length, concurrency, split },
      { config_hash: rt.loaded.hash },
    ),
  );
  const started = performance.now();
  const done: RolloutSummary[] = [];
  let onCanaryCount = 0;
  const onCanaryIds = new Set<string>();
  const tools = createToolRunner(config.tools, rt.paths.baseDir);
  const locked = new StoreLockedStop(signal);
  await pool(tasks, concurrency, locked.signal, async (task) => {
    // A canary serves a fixed share of the tasks, chosen by a hash of the run and the task.
    const onCanary = candidate !== undefined && unitHash(`${runId}:${task.id}`) < trial!.fraction;
    const setup = onCanary ? candidate : production;
    if (onCanary) onCanaryCount++;
    const summary = await locked.run(() =>
      runRollout(task, {
        store,
        runId,
        setup,
        config,
        tools,
        signal: locked.signal,
        ...(onCanary ? { metadata: { canary: true } } : {}),
      }),
    );
    if (!summary) return;
    if (onCanary) onCanaryIds.add(summary.id);
    done.push(summary);
    opts.onProgress?.(progress(done, tasks.length, started, summary));
  });
  const summary = {
    ...summarize(runId, tasks.length, done, performance.now() - started, locked.signal.aborted),
    resourceSet: { id: production.set.id, version: production.set.version },
    canary: candidate
      ? { id: candidate.set.id, version: candidate.set.version, fraction: trial!.fraction, rollouts: onCanaryCount }
      : null,
    shortfall,
  };
  if (locked.error) throw await locked.end(store, summary);
  if (config.tasks.curriculum.enabled && !opts.tasks) {
    const update = await store.write(() => recordCurriculum(rt, store, tasks, done, onCanaryIds));
    for (const c of update.advanced)
      opts.onStage?.(`curriculum: ${c.suite} moves up to level ${c.level} (${c.reason})`);
    Object.assign(summary, { curriculum: update });
  }
  await store.write(() => store.collectRuns.finish(runId, summary.status, { ...summary, rollouts: undefined }));
  return summary;
}

function progress(done: RolloutSummary[], total: number, started: number, last: RolloutSummary): CollectProgress {
  const elapsedMs = performance.now() - started;
  const count = (s: RolloutSummary['status']) => done.filter((d) => d.status === s).length;
  return {
    total,
    done: done.length,
    failed: count('failed'),
    cancelled: count('cancelled'),
    running: 0,
    elapsedMs,
    etaMs: done.length ? (elapsedMs / done.length) * (total - done.length) : null,
    last,
  };
}

function summarize(
  runId: string,
  total: number,
  rollouts: RolloutSummary[],
  wallMs: number,
  interrupted: boolean,
): Omit<CollectSummary, 'resourceSet' | 'canary' | 'shortfall'> {
  const completed = rollouts.filter((r) => r.status === 'completed');
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
  const scored = completed.filter((r) => r.quality !== null);
  return {
    runId,
    status: interrupted ? 'cancelled' : 'completed',
    tasks: total,
    completed: completed.length,
    failed: rollouts.filter((r) => r.status === 'failed').length,
    cancelled: rollouts.filter((r) => r.status === 'cancelled').length + (total - rollouts.length),
    successRate: total ? completed.length / total : 0,
    correctRate: scored.length ? scored.filter((r) => r.quality === 1).length / scored.length : null,
    meanReward: mean(completed.map((r) => r.reward).filter((x): x is number => x !== null)),
    consensusRate: mean(completed.map((r) => (r.consensus ? 1 : 0))),
    meanRounds: mean(completed.map((r) => r.rounds)),
    tokens: rollouts.reduce((a, r) => a + r.tokens, 0),
    wallMs,
    failureReasons: countReasons(rollouts),
    rollouts,
  };
}

function countReasons(rollouts: RolloutSummary[]): CollectSummary['failureReasons'] {
  const counts = new Map<string, number>();
  for (const r of rollouts)
    if (r.status === 'failed')
      counts.set(r.error ?? 'unknown error', (counts.get(r.error ?? 'unknown error') ?? 0) + 1);
  return [...counts].map(([error, count]) => ({ error, count })).sort((a, b) => b.count - a.count);
}

/** A string's hash as a number in [0, 1). */
function unitHash(key: string): number {
  return parseInt(sha256(key).slice(0, 8), 16) / 2 ** 32;
}
