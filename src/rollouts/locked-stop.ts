import { StoreBusyError, type Store } from '../store/index.js';
import type { RolloutSummary } from './rollout.js';

export interface RunSummary {
  runId: string;
  tasks: number;
  rollouts: RolloutSummary[];
}

/**
 * Ends a run whose store stays locked by another process: the first rollout that cannot be recorded
 * stops the others (no new ones start, running ones are cancelled), and the run ends with exit 1.
 */
export class StoreLockedStop {
  private readonly controller = new AbortController();
  readonly signal: AbortSignal;
  error: StoreBusyError | undefined;
  private unrecorded = 0;

  constructor(user: AbortSignal) {
    this.signal = AbortSignal.any([user, this.controller.signal]);
  }

  async run(fn: () => Promise<RolloutSummary>): Promise<RolloutSummary | undefined> {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof StoreBusyError)) throw err;
      this.error ??= err;
      this.unrecorded++;
      this.controller.abort();
      return undefined;
    }
  }

  /** The error to end the run with, after one last try to mark the run failed (else the next open does). */
  async end(store: Store, summary: RunSummary & Record<string, unknown>): Promise<StoreBusyError> {
    const waited = store.busy.lockedForMs;
    const recorded = summary.rollouts.length;
    const more = `; collect stopped: ${recorded} rollout(s) recorded, ${this.unrecorded} could not be recorded (any left running are marked failed when the store is next opened), ${summary.tasks - recorded - this.unrecorded} not started`;
    await store
      .write(() =>
        store.collectRuns.finish(
          summary.runId,
          'failed',
          { ...summary, rollouts: undefined },
          `${this.error!.message}${more}`,
        ),
      )
      .catch(() => {});
    return store.busy.error(waited, 1, more);
  }
}
