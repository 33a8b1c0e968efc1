import { newId } from '../util/ids.js';
import type { Db } from './database.js';
import { HOST } from './process-owner.js';
import type { Redactor } from './redact.js';
import { jsonFlag, jsonText, NO_LIMIT } from './sql.js';
import type { Rollout, RolloutFilter, RolloutFinish, RolloutStart, RunStatus } from './types.js';

interface RolloutRaw {
  num: number;
  id: string;
  run_id: string | null;
  task_id: string | null;
  source: string;
  status: RunStatus;
  error: string | null;
  final_answer: string | null;
  winner: string | null;
  total_reward: number | null;
  tokens: number;
  tool_calls: number;
  messages: number;
  wall_ms: number;
  metadata: string;
  resource_set_id: string | null;
  started_at: number;
  finished_at: number | null;
}

/** The source of rollouts an evaluation records. */
export const EVAL_SOURCE = 'eval';

/** The source of the rollouts `massgen-rl gateway` captures: one per session of outside agents. */
export const GATEWAY_SOURCE = 'gateway';

/** The source of the rollouts received as OpenTelemetry spans (POST /v1/traces, `traces import --otlp`). */
export const OTLP_SOURCE = 'otlp';

/** The source of the rollouts `traces import --massgen-logs` writes: MassGen's runs, training data as they are. */
export const MASSGEN_IMPORT_SOURCE = 'massgen-import';

/** Captured traffic, which `collect.source: gateway` takes: the gateway's sessions and sessions received as spans. */
export const CAPTURED_SOURCES = [GATEWAY_SOURCE, OTLP_SOURCE] as const;

/** Not a training copy of a captured session (collect.source gateway): its session already counts. */
const NOT_A_COPY = (db: Db) => `${jsonText(db, 'metadata', 'captured_from')} IS NULL`;

export class RolloutRepository {
  private readonly insert;
  private readonly update;

  constructor(
    private readonly db: Db,
    private readonly redactor: Redactor,
  ) {
    this.insert =
      db.prepare(`INSERT INTO rollouts (id, run_id, task_id, source, status, metadata, resource_set_id, pid, host, started_at)
      VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)`);
    this.update = db.prepare(`UPDATE rollouts SET status = ?, error = ?, final_answer = ?, winner = ?, total_reward = ?,
      tokens = ?, tool_calls = ?, messages = ?, wall_ms = ?, finished_at = ? WHERE id = ?`);
  }

  start(input: RolloutStart = {}): string {
    const { id, insert } = this.prepare(input);
    insert();
    return id;
  }

  /**
   * A rollout's id now and its row later: `insert` is meant to run inside the caller's first write
   * transaction (see SpanRepository.writer), which saves a commit of its own. started_at is now.
   */
  prepare(input: RolloutStart = {}): { id: string; insert: () => void } {
    const id = input.id ?? newId('ro');
    const row = [
      id,
      input.runId ?? null,
      input.taskId ?? null,
      input.source ?? 'collect',
      this.redactor.json(input.metadata ?? {}),
      input.resourceSetId ?? null,
      process.pid,
      HOST,
      Date.now(),
    ];
    return { id, insert: () => void this.insert.run(row) };
  }

  finish(id: string, f: RolloutFinish): void {
    const changed = this.update.run(
      f.status,
      this.redactor.scrubOptional(f.error),
      this.redactor.scrubOptional(f.finalAnswer),
      f.winner ?? null,
      f.totalReward ?? null,
      f.tokens ?? 0,
      f.toolCalls ?? 0,
      f.messages ?? 0,
      f.wallMs ?? 0,
      Date.now(),
      id,
    ).changes;
    if (!changed) throw new Error(`rollout ${id} does not exist`);
  }

  /**
   * Total rewards of the completed rollouts a resource set served, oldest first: those started at or
   * after `after` and before `before`; with `last`, only the newest that many. `sources`: collect's and
   * the gateway's captured sessions unless named; never the training copies of captured sessions.
   */
  setRewards(
    setId: string,
    opts: { after?: number; before?: number; last?: number; canary?: boolean; sources?: readonly string[] } = {},
  ): number[] {
    const flag = jsonFlag(this.db, 'metadata', 'canary');
    const canary = opts.canary === undefined ? '' : ` AND ${opts.canary ? flag : `NOT (${flag})`}`;
    const sources = opts.sources ?? ['collect', GATEWAY_SOURCE];
    const rows = this.db
      .prepare(
        `SELECT total_reward FROM rollouts WHERE resource_set_id = ? AND source IN (${sources.map(() => '?').join(', ')})
      AND status = 'completed' AND total_reward IS NOT NULL AND started_at >= ? AND started_at < ?${canary}
      AND ${NOT_A_COPY(this.db)} ORDER BY num DESC LIMIT ?`,
      )
      .pluck()
      .all(
        setId,
        ...sources,
        opts.after ?? 0,
        opts.before ?? Number.MAX_SAFE_INTEGER,
        opts.last ?? NO_LIMIT,
      ) as number[];
    return rows.reverse();
  }

  /** What a set served since `after`: its collect and gateway rollouts, the gateway's sessions among them, their rewards. */
  setActivity(
    setId: string,
    after: number,
  ): { rollouts: number; sessions: number; rewarded: number; meanReward: number | null } {
    const rows = this.db
      .prepare(
        `SELECT source, total_reward FROM rollouts WHERE resource_set_id = ? AND started_at >= ?
      AND source IN ('collect', ?) AND ${NOT_A_COPY(this.db)}`,
      )
      .all(setId, after, GATEWAY_SOURCE) as { source: string; total_reward: number | null }[];
    const rewards = rows.map((r) => r.total_reward).filter((x): x is number => x !== null);
    return {
      rollouts: rows.length,
      sessions: rows.filter((r) => r.source === GATEWAY_SOURCE).length,
      rewarded: rewards.length,
      meanReward: rewards.length ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null,
    };
  }

  /**
   * An imported rollout's own timings, and no owner process: it ran elsewhere, before the import, so
   * orphan recovery must never take it for one of ours.
   */
  setImportedTimes(id: string, startedAt: number, finishedAt: number | null): void {
    this.db
      .prepare('UPDATE rollouts SET started_at = ?, finished_at = ?, pid = NULL, host = NULL WHERE id = ?')
      .run(startedAt, finishedAt, id);
  }

  /** Sets top-level metadata fields of a rollout (read, merged, written: call inside a transaction). */
  mergeMetadata(id: string, fields: Record<string, unknown>): void {
    const r = this.get(id);
    if (!r) throw new Error(`rollout ${id} does not exist`);
    const merged = this.redactor.json({ ...r.metadata, ...fields });
    this.db.prepare('UPDATE rollouts SET metadata = ? WHERE id = ?').run(merged, id);
  }

  setTotalReward(id: string, value: number | null): void {
    this.db.prepare('UPDATE rollouts SET total_reward = ? WHERE id = ?').run(value, id);
  }

  get(id: string): Rollout | undefined {
    const row = this.db.prepare('SELECT * FROM rollouts WHERE id = ?').get(id) as RolloutRaw | undefined;
    return row && toRollout(row);
  }

  /** Finds a rollout by id or unique id prefix. */
  resolve(idOrPrefix: string): Rollout | undefined {
    const exact = this.get(idOrPrefix);
    if (exact) return exact;
    const rows = this.db
      .prepare("SELECT * FROM rollouts WHERE id LIKE ? ESCAPE '\\' LIMIT 2")
      .all(`${idOrPrefix.replace(/[\\%_]/g, '\\$&')}%`) as RolloutRaw[];
    return rows.length === 1 ? toRollout(rows[0]!) : undefined;
  }

  list(filter: RolloutFilter = {}): Rollout[] {
    const { where, params } = whereClause(filter);
    const limit = filter.limit ?? NO_LIMIT;
    const rows = this.db
      .prepare(`SELECT * FROM rollouts ${where} ORDER BY num DESC LIMIT ? OFFSET ?`)
      .all(...params, limit, filter.offset ?? 0) as RolloutRaw[];
    return rows.map(toRollout);
  }

  /** The newest rollout of a gateway session that a client named (X-Session-Id or `user`). */
  gatewaySession(client: string, session: string): Rollout | undefined {
    const row = this.db
      .prepare(
        `SELECT * FROM rollouts WHERE source = ? AND ${jsonText(this.db, 'metadata', 'client')} = ?
      AND ${jsonText(this.db, 'metadata', 'session')} = ? ORDER BY num DESC LIMIT 1`,
      )
      .get(GATEWAY_SOURCE, client, session) as RolloutRaw | undefined;
    return row && toRollout(row);
  }

  /**
   * Completed captured sessions (CAPTURED_SOURCES) that finished after `afterMs` or got a reward row since then (feedback,
   * a judge): what a `collect.source: gateway` run looks at, oldest first.
   */
  capturedSince(afterMs: number): Rollout[] {
    const rows = this.db
      .prepare(
        `SELECT * FROM rollouts WHERE source IN (?, ?) AND status = 'completed'
      AND (finished_at > ? OR id IN (SELECT rollout_id FROM rewards WHERE created_at > ?)) ORDER BY finished_at, num`,
      )
      .all(...CAPTURED_SOURCES, afterMs, afterMs) as RolloutRaw[];
    return rows.map(toRollout);
  }

  /** Rollouts whose metadata has this top-level key with this string value (e.g. the prompt-optimization run that ran them). */
  countTagged(key: string, value: string): number {
    return this.db
      .prepare(`SELECT COUNT(*) FROM rollouts WHERE ${jsonText(this.db, 'metadata', key)} = ?`)
      .pluck()
      .get(value) as number;
  }

  /** Deletes a rollout with its spans and rewards (an abandoned attempt that is run again). */
  discard(id: string): void {
    this.db.prepare('DELETE FROM rollouts WHERE id = ?').run(id);
  }

  /**
   * Completed collect rollouts and imported MassGen runs numbered after `afterNum` (the data a training run has that
   * the last did not).
   */
  countCollectedAfter(afterNum: number): number {
    const sql = "SELECT COUNT(*) FROM rollouts WHERE num > ? AND status = 'completed' AND source IN ('collect', ?)";
    return this.db.prepare(sql).pluck().get(afterNum, MASSGEN_IMPORT_SOURCE) as number;
  }

  /** Rollouts other than evaluations numbered after `afterNum` up to `throughNum` (a training dataset's window). */
  countInWindow(afterNum: number, throughNum: number): number {
    return this.db
      .prepare('SELECT COUNT(*) FROM rollouts WHERE num > ? AND num <= ? AND source <> ?')
      .pluck()
      .get(afterNum, throughNum, EVAL_SOURCE) as number;
  }

  count(filter: RolloutFilter = {}): number {
    const { where, params } = whereClause(filter);
    return this.db
      .prepare(`SELECT COUNT(*) FROM rollouts ${where}`)
      .pluck()
      .get(...params) as number;
  }
}

export function whereClause(f: RolloutFilter): { where: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  const add = (sql: string, v: unknown) => {
    parts.push(sql);
    params.push(v);
  };
  if (f.runId !== undefined) add('run_id = ?', f.runId);
  if (f.status !== undefined) add('status = ?', f.status);
  if (f.taskId !== undefined) add('task_id = ?', f.taskId);
  if (typeof f.source === 'string') add('source = ?', f.source);
  else if (f.source !== undefined) {
    parts.push(`source IN (${f.source.map(() => '?').join(', ')})`);
    params.push(...f.source);
  }
  if (f.minReward !== undefined) add('total_reward >= ?', f.minReward);
  if (f.maxReward !== undefined) add('total_reward <= ?', f.maxReward);
  return { where: parts.length ? `WHERE ${parts.join(' AND ')}` : '', params };
}

export function toRollout(r: RolloutRaw): Rollout {
  return {
    num: r.num,
    id: r.id,
    runId: r.run_id,
    taskId: r.task_id,
    source: r.source,
    status: r.status,
    error: r.error,
    finalAnswer: r.final_answer,
    winner: r.winner,
    totalReward: r.total_reward,
    tokens: r.tokens,
    toolCalls: r.tool_calls,
    messages: r.messages,
    wallMs: r.wall_ms,
    metadata: JSON.parse(r.metadata) as Record<string, unknown>,
    resourceSetId: r.resource_set_id ?? null,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
  };
}
