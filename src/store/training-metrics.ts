import { isBusy } from './busy.js';
import type { Db } from './database.js';
import type { Redactor } from './redact.js';
import { NO_LIMIT } from './sql.js';

export interface StepMetrics {
  step: number;
  metrics: Record<string, unknown>;
}

export interface StoredStepMetrics extends StepMetrics {
  runId: string;
  createdAt: number;
}

/** Per-step training metrics of a training run (loss, reward, kl, learning rate, …). */
export class TrainingMetricsRepository {
  constructor(
    private readonly db: Db,
    private readonly redactor: Redactor,
  ) {}

  /** Writes steps in one transaction. A step seen again (a resumed run) replaces the earlier row. */
  append(runId: string, steps: readonly StepMetrics[]): void {
    if (!steps.length) return;
    const insert = this.db.prepare(`INSERT INTO training_metrics (run_id, step, metrics, created_at) VALUES (?, ?, ?, ?)
      ON CONFLICT (run_id, step) DO UPDATE SET metrics = excluded.metrics, created_at = excluded.created_at`);
    const now = Date.now();
    this.db
      .transaction(() => {
        for (const s of steps) insert.run(runId, s.step, this.redactor.json(s.metrics), now);
      })
      .immediate();
  }

  /** Buffers steps and writes them in batches (when batchSize are pending, or maxDelayMs after the first). */
  writer(runId: string, batchSize = 50, maxDelayMs = 2000): MetricsWriter {
    return new MetricsWriter(this, runId, batchSize, maxDelayMs);
  }

  /** Steps of a run in step order; `fromStep` is inclusive. */
  list(runId: string, opts: { fromStep?: number; limit?: number } = {}): StoredStepMetrics[] {
    const rows = this.db
      .prepare('SELECT * FROM training_metrics WHERE run_id = ? AND step >= ? ORDER BY step LIMIT ?')
      .all(runId, opts.fromStep ?? Number.MIN_SAFE_INTEGER, opts.limit ?? NO_LIMIT) as {
      run_id: string;
      step: number;
      metrics: string;
      created_at: number;
    }[];
    return rows.map((r) => ({
      runId: r.run_id,
      step: r.step,
      metrics: JSON.parse(r.metrics) as Record<string, unknown>,
      createdAt: r.created_at,
    }));
  }

  last(runId: string): StoredStepMetrics | undefined {
    const step = this.db.prepare('SELECT MAX(step) FROM training_metrics WHERE run_id = ?').pluck().get(runId) as
      number | null;
    return step === null ? undefined : this.list(runId, { fromStep: step, limit: 1 })[0];
  }

  count(runId: string): number {
    return this.db.prepare('SELECT COUNT(*) FROM training_metrics WHERE run_id = ?').pluck().get(runId) as number;
  }
}

export class MetricsWriter {
  private buffer: StepMetrics[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** A timed flush that failed: rethrown by the next add or flush rather than crashing the process. */
  private failure: unknown;

  constructor(
    private readonly repo: TrainingMetricsRepository,
    readonly runId: string,
    private readonly batchSize: number,
    private readonly maxDelayMs: number,
  ) {}

  add(step: number, metrics: Record<string, unknown>): void {
    this.rethrow();
    this.buffer.push({ step, metrics });
    if (this.buffer.length >= this.batchSize) this.flushOrWait();
    else if (!this.timer) this.wait();
  }

  get pending(): number {
    return this.buffer.length;
  }

  /** Writes what is pending, or throws with the rows kept pending; call it when the run ends. */
  flush(): void {
    this.rethrow();
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.buffer.length) return;
    const rows = this.buffer;
    this.buffer = [];
    try {
      this.repo.append(this.runId, rows);
    } catch (err) {
      this.buffer = [...rows, ...this.buffer];
      throw err;
    }
  }

  /** The writes add() and the timer make: a store another process holds locked leaves the rows for the next try. */
  private flushOrWait(): void {
    try {
      this.flush();
    } catch (err) {
      if (!isBusy(err)) throw err;
      this.wait();
    }
  }

  private wait(): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      try {
        this.flushOrWait();
      } catch (err) {
        this.failure = err;
      }
    }, this.maxDelayMs);
    this.timer.unref();
  }

  private rethrow(): void {
    if (this.failure === undefined) return;
    const err = this.failure;
    this.failure = undefined;
    throw err;
  }
}
