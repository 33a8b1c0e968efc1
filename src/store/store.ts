import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { AuditRepository } from './audit.js';
import { backoffMs, briefly, BusyClock, isBusy, PATIENCE_FACTOR } from './busy.js';
import { CheckpointRepository } from './checkpoints.js';
import { CurriculumRepository } from './curriculum.js';
import { openSqlite, type Db, type OpenOptions } from './database.js';
import { diskFull } from './disk-full.js';
import { EvaluationRepository } from './evaluations.js';
import { LockRepository } from './locks.js';
import { OtlpExportRepository } from './otlp-exports.js';
import { isPostgresUrl, openPostgres } from './postgres/open.js';
import { PgDb } from './postgres/pg-db.js';
import { recoverOrphans } from './process-owner.js';
import { Redactor } from './redact.js';
import { ResourceSetRepository } from './resource-sets.js';
import { ResourceRepository } from './resources.js';
import { RewardRepository } from './rewards.js';
import { RolloutRepository } from './rollouts.js';
import { RunRepository } from './runs.js';
import { SpanRepository } from './spans.js';
import { TaskRepository } from './tasks.js';
import { TrainingMetricsRepository } from './training-metrics.js';
import { TrainingTraceRepository } from './training-traces.js';

export interface StoreOptions extends OpenOptions {
  /** A SQLite file, or a postgres:// URL (its password from the environment variable passwordEnv). */
  path: string;
  passwordEnv?: string;
  redactor?: Redactor;
}

export interface StoreStats {
  path: string;
  backend: 'sqlite' | 'postgres';
  bytes: number;
  schemaVersion: number;
  counts: Record<string, number>;
  rolloutsByStatus: Record<string, number>;
}

const COUNTED = [
  'tasks',
  'collect_runs',
  'rollouts',
  'spans',
  'rewards',
  'resources',
  'resource_sets',
  'checkpoints',
  'training_runs',
  'eval_runs',
  'eval_results',
  'eval_items',
  'curriculum_levels',
  'curriculum_results',
  'audit',
  'loop_runs',
  'otlp_exports',
] as const;

let dbOf: (store: Store) => Db;

/**
 * The database under a store, for the modules of src/store/ and for tests: the rest of src/ reads and
 * writes through the repositories (test/unit/architecture.test.ts fails on SQL or this call elsewhere).
 */
export function storeDb(store: Store): Db {
  return dbOf(store);
}

/** The trace store. Opening it applies migrations and marks rows orphaned by dead processes as failed. */
export class Store {
  readonly tasks: TaskRepository;
  readonly rollouts: RolloutRepository;
  readonly spans: SpanRepository;
  readonly rewards: RewardRepository;
  readonly resources: ResourceRepository;
  readonly collectRuns: RunRepository;
  readonly trainingRuns: RunRepository;
  readonly loopRuns: RunRepository;
  readonly checkpoints: CheckpointRepository;
  readonly trainingMetrics: TrainingMetricsRepository;
  readonly trainingTraces: TrainingTraceRepository;
  readonly sets: ResourceSetRepository;
  readonly audit: AuditRepository;
  readonly curriculum: CurriculumRepository;
  readonly evaluations: EvaluationRepository;
  readonly locks: LockRepository;
  readonly otlpExports: OtlpExportRepository;
  /** Rows found 'running' for processes that had died, now marked failed. */
  readonly recovered: number;
  /** How long writes have been refused by a lock; write() gives up after PATIENCE_FACTOR × busy_timeout_ms. */
  readonly busy: BusyClock;
  private readonly runInTransaction: { immediate(fn: () => unknown): unknown };
  readonly #db: Db;

  static {
    dbOf = (store) => store.#db;
  }

  private constructor(
    readonly path: string,
    db: Db,
    readonly redactor: Redactor,
    private readonly busyTimeoutMs: number,
  ) {
    this.#db = db;
    this.busy = new BusyClock(path, PATIENCE_FACTOR * busyTimeoutMs);
    this.tasks = new TaskRepository(db, redactor);
    this.rollouts = new RolloutRepository(db, redactor);
    this.spans = new SpanRepository(db, redactor);
    this.rewards = new RewardRepository(db, redactor);
    this.resources = new ResourceRepository(db, redactor);
    this.collectRuns = new RunRepository(db, redactor, 'collect');
    this.trainingRuns = new RunRepository(db, redactor, 'training');
    this.loopRuns = new RunRepository(db, redactor, 'loop');
    this.checkpoints = new CheckpointRepository(db, redactor);
    this.trainingMetrics = new TrainingMetricsRepository(db, redactor);
    this.trainingTraces = new TrainingTraceRepository(db);
    this.sets = new ResourceSetRepository(db, redactor);
    this.audit = new AuditRepository(db, redactor);
    this.curriculum = new CurriculumRepository(db, redactor);
    this.evaluations = new EvaluationRepository(db, redactor);
    this.locks = new LockRepository(db);
    this.otlpExports = new OtlpExportRepository(db);
    this.recovered = recoverOrphans(db);
    this.runInTransaction = db.transaction((fn: () => unknown) => fn());
  }

  /** Opens the store; a lock held past busy_timeout_ms while it migrates or recovers orphans is a StoreBusyError. */
  static open(opts: StoreOptions): Store {
    const busyTimeoutMs = opts.busyTimeoutMs ?? 15_000;
    let db: Db | undefined;
    try {
      db = isPostgresUrl(opts.path) ? openPostgres(opts.path, opts) : openSqlite(opts.path, opts);
      return new Store(db.location, db, opts.redactor ?? Redactor.none(), busyTimeoutMs);
    } catch (err) {
      if (db?.open) db.close();
      if (isBusy(err)) throw new BusyClock(opts.path, busyTimeoutMs).error(busyTimeoutMs);
      throw diskFull(err, opts.path) ?? err;
    }
  }

  /** How other clients (the job queue) reach a PostgreSQL store, password included; undefined for SQLite. */
  connection(): string | undefined {
    return this.#db instanceof PgDb ? this.#db.connectionString() : undefined;
  }

  /**
   * Runs fn in one write transaction (taken up front, so concurrent writers queue instead of failing);
   * a lock another process holds past busy_timeout_ms is a StoreBusyError (exit 2, nothing written).
   */
  transaction<T>(fn: () => T): T {
    try {
      return this.lockedTransaction(fn);
    } catch (err) {
      throw this.explain(err);
    }
  }

  /**
   * err as the user sees it: a write refused by another process's lock for busy_timeout_ms is a StoreBusyError, one
   * that found the disk full a DiskFullError.
   */
  explain(err: unknown): unknown {
    if (isBusy(err)) return this.busy.error(this.busyTimeoutMs);
    return diskFull(err, this.path) ?? err;
  }

  private lockedTransaction<T>(fn: () => T): T {
    return this.runInTransaction.immediate(fn) as T;
  }

  /**
   * transaction(fn) for long runs: while another process holds the lock, retried with backoff, each
   * attempt waiting only briefly so the event loop keeps running; a StoreBusyError once writes have been
   * refused for PATIENCE_FACTOR × busy_timeout_ms. fn runs only once the lock is taken.
   */
  async write<T>(fn: () => T): Promise<T> {
    return this.retrying(() => this.lockedTransaction(fn));
  }

  /** fn, which takes its own transactions, retried as write() retries: for a run's closing writes. */
  async retrying<T>(fn: () => T): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        const result = briefly(this.#db, fn);
        this.busy.succeeded();
        return result;
      } catch (err) {
        if (!isBusy(err)) throw err;
        this.busy.refused();
        await sleep(backoffMs(attempt));
      }
    }
  }

  stats(): StoreStats {
    const db = this.#db;
    const counts = Object.fromEntries(
      COUNTED.map((t) => [t, db.prepare(`SELECT COUNT(*) FROM ${t}`).pluck().get() as number]),
    );
    const byStatus = db.prepare('SELECT status, COUNT(*) AS n FROM rollouts GROUP BY status').all() as {
      status: string;
      n: number;
    }[];
    const pg = db.dialect === 'postgres';
    return {
      path: this.path,
      backend: db.dialect,
      bytes: pg
        ? (db.prepare('SELECT pg_database_size(current_database())').pluck().get() as number)
        : fileSize(this.path) + fileSize(`${this.path}-wal`),
      schemaVersion: db.prepare('SELECT COALESCE(MAX(version), 0) FROM schema_migrations').pluck().get() as number,
      counts,
      rolloutsByStatus: Object.fromEntries(byStatus.map((r) => [r.status, r.n])),
    };
  }

  close(): void {
    this.#db.close();
  }
}

function fileSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}
