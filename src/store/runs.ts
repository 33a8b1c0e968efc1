import { newId } from '../util/ids.js';
import type { Db } from './database.js';
import { HOST } from './process-owner.js';
import type { Redactor } from './redact.js';
import { jsonText, nextStartedAt } from './sql.js';
import type { RunStatus } from './types.js';

export interface RunRecord {
  id: string;
  status: RunStatus;
  error: string | null;
  startedAt: number;
  finishedAt: number | null;
  /** The table's JSON detail column (params, config or state), parsed. */
  detail: Record<string, unknown>;
  /** The table's result column (summary or metrics), parsed, if any. */
  result: Record<string, unknown> | null;
  /** Loop runs: the stage it is at. */
  step?: string | null;
}

interface Shape {
  table: 'collect_runs' | 'training_runs' | 'loop_runs';
  prefix: string;
  detail: 'params' | 'config' | 'state';
  result: 'summary' | 'metrics' | null;
  extra: string[];
}

const SHAPES = {
  collect: { table: 'collect_runs', prefix: 'run', detail: 'params', result: 'summary', extra: ['config_hash'] },
  training: {
    table: 'training_runs',
    prefix: 'tr',
    detail: 'config',
    result: 'metrics',
    extra: ['algo', 'dataset_hash', 'log_path'],
  },
  loop: { table: 'loop_runs', prefix: 'loop', detail: 'state', result: null, extra: ['step'] },
} satisfies Record<string, Shape>;

export type RunKind = keyof typeof SHAPES;

/** Collect, training and loop runs share one lifecycle: running → completed | failed | cancelled. */
export class RunRepository {
  private readonly shape: Shape;

  constructor(
    private readonly db: Db,
    private readonly redactor: Redactor,
    kind: RunKind,
  ) {
    this.shape = SHAPES[kind];
  }

  start(detail: Record<string, unknown>, extra: Record<string, string | number | null> = {}): string {
    const { table, prefix } = this.shape;
    const id = newId(prefix);
    const cols = this.shape.extra.filter((c) => c in extra);
    this.db
      .prepare(
        `INSERT INTO ${table} (id, status, ${this.shape.detail}, pid, host, started_at${cols.map((c) => `, ${c}`).join('')})
        VALUES (?, 'running', ?, ?, ?, ?${cols.map(() => ', ?').join('')})`,
      )
      .run(
        id,
        this.redactor.json(detail),
        process.pid,
        HOST,
        nextStartedAt(this.db, table),
        ...cols.map((c) => extra[c] ?? null),
      );
    return id;
  }

  finish(id: string, status: Exclude<RunStatus, 'running'>, result?: Record<string, unknown>, error?: string): void {
    const resultSql = this.shape.result ? `, ${this.shape.result} = ?` : '';
    const params: unknown[] = [status, this.redactor.scrubOptional(error), Date.now()];
    if (this.shape.result) params.push(result ? this.redactor.json(result) : null);
    this.db
      .prepare(`UPDATE ${this.shape.table} SET status = ?, error = ?, finished_at = ?${resultSql} WHERE id = ?`)
      .run(...params, id);
  }

  /** Ends a run only if it is still running; true when this call ended it (several workers may try at once). */
  finishIfRunning(id: string, status: Exclude<RunStatus, 'running'>, result?: Record<string, unknown>): boolean {
    const resultSql = this.shape.result ? `, ${this.shape.result} = ?` : '';
    const params: unknown[] = [
      status,
      Date.now(),
      ...(this.shape.result ? [result ? this.redactor.json(result) : null] : []),
    ];
    return (
      this.db
        .prepare(
          `UPDATE ${this.shape.table} SET status = ?, finished_at = ?${resultSql} WHERE id = ? AND status = 'running'`,
        )
        .run(...params, id).changes === 1
    );
  }

  /** A run no process owns (its work is spread over machines): never taken for an orphan of the process that started it. */
  disown(id: string): void {
    this.db.prepare(`UPDATE ${this.shape.table} SET pid = NULL, host = NULL WHERE id = ?`).run(id);
  }

  /** Replaces the detail column (loop state as it advances) and, for loop runs, the current step. */
  setDetail(id: string, detail: Record<string, unknown>, step?: string | null): void {
    const stepSql = this.shape.extra.includes('step') && step !== undefined ? ', step = ?' : '';
    this.db
      .prepare(`UPDATE ${this.shape.table} SET ${this.shape.detail} = ?${stepSql} WHERE id = ?`)
      .run(this.redactor.json(detail), ...(stepSql ? [step] : []), id);
  }

  /** Takes over a run that stopped (its process died or it was interrupted): running again, owned by this process. */
  reopen(id: string): void {
    this.db
      .prepare(
        `UPDATE ${this.shape.table} SET status = 'running', error = NULL, finished_at = NULL, pid = ?, host = ? WHERE id = ?`,
      )
      .run(process.pid, HOST, id);
  }

  get(id: string): RunRecord | undefined {
    const row = this.db.prepare(`SELECT * FROM ${this.shape.table} WHERE id = ?`).get(id) as
      Record<string, unknown> | undefined;
    return row && this.toRecord(row);
  }

  /** Newest first; runs started in the same millisecond, the later inserted first. */
  latest(limit = 5): RunRecord[] {
    const rows = this.db
      .prepare(`SELECT * FROM ${this.shape.table} ORDER BY started_at DESC, rowid DESC LIMIT ?`)
      .all(limit);
    return (rows as Record<string, unknown>[]).map((r) => this.toRecord(r));
  }

  /** The newest run with this status whose detail has the top-level `key` set to `value`. */
  latestWhere(key: string, value: string, status: RunStatus = 'completed'): RunRecord | undefined {
    const { table, detail } = this.shape;
    const row = this.db
      .prepare(
        `SELECT * FROM ${table} WHERE status = ? AND ${jsonText(this.db, detail, key)} = ?
        ORDER BY started_at DESC, rowid DESC LIMIT 1`,
      )
      .get(status, value) as Record<string, unknown> | undefined;
    return row && this.toRecord(row);
  }

  private toRecord(row: Record<string, unknown>): RunRecord {
    const result = this.shape.result ? (row[this.shape.result] as string | null) : null;
    return {
      id: row.id as string,
      status: row.status as RunStatus,
      error: row.error as string | null,
      startedAt: row.started_at as number,
      finishedAt: row.finished_at as number | null,
      detail: JSON.parse(row[this.shape.detail] as string) as Record<string, unknown>,
      result: result ? (JSON.parse(result) as Record<string, unknown>) : null,
      ...('step' in row ? { step: row.step as string | null } : {}),
    };
  }
}
