import { setTimeout as sleep } from 'node:timers/promises';
import type { Rollout, RunRecord, Store } from '../../store/index.js';

/** An attempt that will never finish: still running (its worker died), cancelled, or failed because its process died. */
export function isAbandoned(r: Rollout): boolean {
  return (
    r.status === 'running'
    || r.status === 'cancelled'
    || (r.status === 'failed' && (r.error ?? '').startsWith('interrupted'))
  );
}

/** A queued run's rollouts that count: one per task recorded, abandoned attempts left out. */
function recordedRollouts(store: Store, runId: string): Rollout[] {
  return store.rollouts.list({ runId }).filter((r) => !isAbandoned(r));
}

/** Ends a queued collect run once every one of its tasks has its recorded rollout; true when this call ended it. */
export async function finishIfDone(store: Store, runId: string): Promise<boolean> {
  const run = store.collectRuns.get(runId);
  if (!run || run.status !== 'running') return false;
  const total = Number((run.detail as { n?: number }).n ?? 0);
  const rollouts = recordedRollouts(store, runId);
  if (new Set(rollouts.map((r) => r.taskId)).size < total) return false;
  const completed = rollouts.filter((r) => r.status === 'completed');
  const rewards = completed.map((r) => r.totalReward).filter((x): x is number => x !== null);
  const summary = {
    runId,
    status: 'completed',
    tasks: total,
    completed: completed.length,
    failed: rollouts.length - completed.length,
    cancelled: 0,
    successRate: total ? completed.length / total : 0,
    meanReward: rewards.length ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null,
    tokens: rollouts.reduce((a, r) => a + r.tokens, 0),
  };
  return store.write(() => store.collectRuns.finishIfRunning(runId, 'completed', summary));
}

/** Waits until the workers have recorded every task of a queued run (the run finished), noting progress. */
export async function awaitQueuedRun(
  store: Store,
  runId: string,
  signal: AbortSignal,
  note: (message: string) => void,
): Promise<RunRecord> {
  let last = '';
  for (;;) {
    const run = store.collectRuns.get(runId);
    if (!run) throw new Error(`collect run ${runId} is not in the store`);
    if (run.status !== 'running') return run;
    if (signal.aborted) throw signal.reason ?? new Error('interrupted');
    const recorded = new Set(recordedRollouts(store, runId).map((r) => r.taskId)).size;
    const line = `workers: ${recorded}/${Number(run.detail.n ?? 0)} task(s) recorded (run ${runId}; start workers with \`massgen-rl collect --worker\`)`;
    if (line !== last) note((last = line));
    await sleep(1000, undefined, { signal }).catch(() => {});
  }
}
