import { newId } from '../util/ids.js';
import type { Db } from './database.js';
import { HOST } from './process-owner.js';
import type { Redactor } from './redact.js';
import { nextStartedAt } from './sql.js';
import type { RunStatus } from './types.js';

/** One orchestration of a resource set on one task and sampling seed, as evaluations compare them. */
export interface EvalResult {
  /** ResourceSetRepository.servingHash of the set measured: the key, with task, seed and settings. */
  servingHash: string;
  setId: string;
  taskHash: string;
  seed: number;
  settingsHash: string;
  taskId: string;
  category: string | null;
  rolloutId: string | null;
  evalRunId: string | null;
  status: string;
  reward: number | null;
  /** 1/0 when the task has a reference the final answer is checked against, else null. */
  success: number | null;
  /** rewards.references off: 1/0 from the withheld reference (the held-out check), else null or absent. */
  checked?: number | null;
  consensus: boolean;
  rounds: number;
  tokens: number;
  wallMs: number;
}

export interface EvalRun {
  id: string;
  status: RunStatus;
  baselineSet: string;
  candidateSet: string;
  trigger: string;
  params: Record<string, unknown>;
  summary: Record<string, unknown> | null;
  reportPath: string | null;
  error: string | null;
  startedAt: number;
  finishedAt: number | null;
}

/** One replayed captured call of an evaluation (eval.source gateway), scored for the pair of sets. */
export interface EvalItem {
  evalRunId: string;
  idx: number;
  kind: 'judge' | 'reference';
  /** The captured rollout and the span of its call. */
  rolloutId: string | null;
  spanSeq: number | null;
  seed: number;
  taskId: string | null;
  /** The paired score: judge 1 (candidate preferred) / 0.5 / 0; reference candidate − baseline reward. */
  score: number;
  baselineValue: number | null;
  candidateValue: number | null;
  /** Judge: both orders named the same winner. */
  agreed: boolean | null;
  /** The answers, the verdicts, the tokens. */
  detail: Record<string, unknown>;
}

type Key = Pick<EvalResult, 'servingHash' | 'taskHash' | 'seed' | 'settingsHash'>;

export class EvaluationRepository {
  constructor(
    private readonly db: Db,
    private readonly redactor: Redactor,
  ) {}

  startRun(baselineSet: string, candidateSet: string, params: Record<string, unknown>, trigger = 'cli'): string {
    const id = newId('ev');
    this.db
      .prepare(
        `INSERT INTO eval_runs (id, status, baseline_set, candidate_set, trigger, params, pid, host, started_at)
      VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        id,
        baselineSet,
        candidateSet,
        trigger,
        this.redactor.json(params),
        process.pid,
        HOST,
        nextStartedAt(this.db, 'eval_runs'),
      );
    return id;
  }

  finishRun(
    id: string,
    status: Exclude<RunStatus, 'running'>,
    summary: Record<string, unknown> | null,
    error?: string | null,
  ): void {
    this.db
      .prepare('UPDATE eval_runs SET status = ?, summary = ?, error = ?, finished_at = ? WHERE id = ?')
      .run(
        status,
        summary ? this.redactor.json(summary) : null,
        this.redactor.scrubOptional(error ?? null),
        Date.now(),
        id,
      );
  }

  setReport(id: string, reportPath: string): void {
    this.db.prepare('UPDATE eval_runs SET report_path = ? WHERE id = ?').run(reportPath, id);
  }

  run(id: string): EvalRun | undefined {
    const r = this.db.prepare('SELECT * FROM eval_runs WHERE id = ?').get(id) as Record<string, unknown> | undefined;
    return r && toRun(r);
  }

  runs(opts: { limit?: number; candidateSet?: string; status?: RunStatus } = {}): EvalRun[] {
    const where: string[] = [];
    const params: unknown[] = [];
    if (opts.candidateSet) {
      where.push('candidate_set = ?');
      params.push(opts.candidateSet);
    }
    if (opts.status) {
      where.push('status = ?');
      params.push(opts.status);
    }
    const sql = `SELECT * FROM eval_runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY started_at DESC, rowid DESC LIMIT ?`;
    return (this.db.prepare(sql).all(...params, opts.limit ?? 50) as Record<string, unknown>[]).map(toRun);
  }

  result(key: Key): EvalResult | undefined {
    const r = this.db
      .prepare('SELECT * FROM eval_results WHERE serving_hash = ? AND task_hash = ? AND seed = ? AND settings_hash = ?')
      .get(key.servingHash, key.taskHash, key.seed, key.settingsHash) as Record<string, unknown> | undefined;
    return r && toResult(r);
  }

  /** Records a measured result (the first one for a key stays: a result is measured once). */
  addResult(r: EvalResult): void {
    this.db
      .prepare(
        `INSERT INTO eval_results (serving_hash, set_id, task_hash, seed, settings_hash, task_id, category, rollout_id, eval_run_id,
      status, reward, success, checked, consensus, rounds, tokens, wall_ms, created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT DO NOTHING`,
      )
      .run(
        r.servingHash,
        r.setId,
        r.taskHash,
        r.seed,
        r.settingsHash,
        r.taskId,
        r.category,
        r.rolloutId,
        r.evalRunId,
        r.status,
        r.reward,
        r.success,
        r.checked ?? null,
        r.consensus ? 1 : 0,
        r.rounds,
        r.tokens,
        r.wallMs,
        Date.now(),
      );
  }

  addItem(i: EvalItem): void {
    this.db
      .prepare(
        `INSERT INTO eval_items (eval_run_id, idx, kind, rollout_id, span_seq, seed, task_id, score, baseline_value,
      candidate_value, agreed, detail, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        i.evalRunId,
        i.idx,
        i.kind,
        i.rolloutId,
        i.spanSeq,
        i.seed,
        i.taskId,
        i.score,
        i.baselineValue,
        i.candidateValue,
        i.agreed === null ? null : i.agreed ? 1 : 0,
        this.redactor.json(i.detail),
        Date.now(),
      );
  }

  /** A replay evaluation's items in order. */
  items(evalRunId: string): EvalItem[] {
    const rows = this.db
      .prepare('SELECT * FROM eval_items WHERE eval_run_id = ? ORDER BY idx')
      .all(evalRunId) as Record<string, unknown>[];
    return rows.map((r) => ({
      evalRunId: r.eval_run_id as string,
      idx: r.idx as number,
      kind: r.kind as EvalItem['kind'],
      rolloutId: r.rollout_id as string | null,
      spanSeq: r.span_seq as number | null,
      seed: r.seed as number,
      taskId: r.task_id as string | null,
      score: r.score as number,
      baselineValue: r.baseline_value as number | null,
      candidateValue: r.candidate_value as number | null,
      agreed: r.agreed === null ? null : r.agreed === 1,
      detail: JSON.parse(r.detail as string) as Record<string, unknown>,
    }));
  }
}

function toRun(r: Record<string, unknown>): EvalRun {
  return {
    id: r.id as string,
    status: r.status as RunStatus,
    baselineSet: r.baseline_set as string,
    candidateSet: r.candidate_set as string,
    trigger: r.trigger as string,
    params: JSON.parse(r.params as string) as Record<string, unknown>,
    summary: r.summary ? (JSON.parse(r.summary as string) as Record<string, unknown>) : null,
    reportPath: r.report_path as string | null,
    error: r.error as string | null,
    startedAt: r.started_at as number,
    finishedAt: r.finished_at as number | null,
  };
}

function toResult(r: Record<string, unknown>): EvalResult {
  return {
    servingHash: r.serving_hash as string,
    setId: r.set_id as string,
    taskHash: r.task_hash as string,
    seed: r.seed as number,
    settingsHash: r.settings_hash as string,
    taskId: r.task_id as string,
    category: r.category as string | null,
    rolloutId: r.rollout_id as string | null,
    evalRunId: r.eval_run_id as string | null,
    status: r.status as string,
    reward: r.reward as number | null,
    success: r.success as number | null,
    checked: (r.checked ?? null) as number | null,
    consensus: r.consensus === 1,
    rounds: r.rounds as number,
    tokens: r.tokens as number,
    wallMs: r.wall_ms as number,
  };
}
