import { REFERENCE_VERIFYING } from '../config/sections/rewards.js';
import { backoffMs, briefly, isBusy } from './busy.js';
import type { Db } from './database.js';
import type { Redactor } from './redact.js';
import { jsonText, multiRowInsert, sqlFamilies } from './sql.js';
import type { Span, SpanInput, SpanType } from './types.js';

interface SpanRowRaw {
  rollout_id: string;
  seq: number;
  parent_seq: number | null;
  type: SpanType;
  name: string;
  agent: string | null;
  started_at: number;
  duration_ms: number;
  payload: string;
}

const INSERT =
  'INSERT INTO spans (rollout_id, seq, parent_seq, type, name, agent, started_at, duration_ms, payload) VALUES ';
/**
 * Rows per INSERT statement, a power of two up to this (9 parameters a row, far under either backend's
 * limit): on PostgreSQL each statement is a round trip, so a batch goes in a few; few distinct statements
 * are ever prepared.
 */
const MAX_ROWS_PER_INSERT = 128;

export class SpanRepository {
  private readonly maxSeq;
  private readonly listStmt;
  private readonly insertAll: (rows: readonly unknown[][], open?: () => void) => void;

  constructor(
    private readonly db: Db,
    private readonly redactor: Redactor,
  ) {
    const insert = multiRowInsert(db, INSERT, 9);
    this.insertAll = (rows: readonly unknown[][], open?: () => void) => {
      open?.();
      for (let i = 0; i < rows.length;) {
        let n = MAX_ROWS_PER_INSERT;
        while (n > rows.length - i) n >>= 1;
        insert(n).run(n === 1 ? rows[i]! : rows.slice(i, i + n).flat());
        i += n;
      }
    };
    this.maxSeq = db.prepare('SELECT COALESCE(MAX(seq), 0) FROM spans WHERE rollout_id = ?').pluck();
    this.listStmt = db.prepare('SELECT * FROM spans WHERE rollout_id = ? ORDER BY seq');
  }

  /**
   * A buffered writer for one rollout: sequence numbers are assigned at add(), rows land on flush(),
   * which also happens once batchSize spans wait or the oldest has waited maxDelayMs. With `open`
   * (RolloutRepository.prepare), the rollout is new: its row is inserted by the first flush, in the
   * same transaction as the first spans.
   */
  writer(rolloutId: string, batchSize = 256, maxDelayMs?: number, open?: () => void): SpanWriter {
    const lastSeq = open ? 0 : (this.maxSeq.get(rolloutId) as number);
    return new SpanWriter(this, rolloutId, lastSeq, batchSize, maxDelayMs, open);
  }

  /** Appends spans in one transaction and returns their sequence numbers. */
  append(rolloutId: string, spans: readonly SpanInput[]): number[] {
    const w = this.writer(rolloutId, Number.POSITIVE_INFINITY);
    const seqs = spans.map((s) => w.add(s));
    w.flush();
    return seqs;
  }

  /** @internal used by SpanWriter: one IMMEDIATE transaction per batch, so a crash never half-writes. */
  writeBatch(rows: readonly unknown[][], open?: () => void): void {
    this.db.append(() => this.insertAll(rows, open));
  }

  /** @internal used by SpanWriter for flushes nobody waits for: a locked store is retried later instead of waited for. */
  briefly<T>(fn: () => T): T {
    return briefly(this.db, fn);
  }

  encodePayload(payload: unknown): string {
    return this.redactor.json(payload);
  }

  encodePayloadJson(text: string, payload: unknown): string {
    return this.redactor.jsonText(text, payload);
  }

  scrub(text: string | null | undefined): string | null {
    return this.redactor.scrubOptional(text);
  }

  list(rolloutId: string): Span[] {
    return (this.listStmt.all(rolloutId) as SpanRowRaw[]).map(toSpan);
  }

  /** The agents a rollout's spans name, in order of first appearance. */
  agents(rolloutId: string): string[] {
    return this.db
      .prepare(
        `SELECT agent FROM spans WHERE rollout_id = ? AND agent IS NOT NULL
      GROUP BY agent ORDER BY MIN(seq)`,
      )
      .pluck()
      .all(rolloutId) as string[];
  }

  /** The gateway rollout holding a captured call (its span's turn_id), if the client is the one that sent it. */
  gatewayCall(callId: string, client: string): string | undefined {
    return this.db
      .prepare(
        `SELECT s.rollout_id FROM spans s JOIN rollouts r ON r.id = s.rollout_id
      WHERE r.source = 'gateway' AND ${jsonText(this.db, 'r.metadata', 'client')} = ?
        AND s.type IN ('prompt', 'message') AND ${jsonText(this.db, 's.payload', 'turn_id')} = ? LIMIT 1`,
      )
      .pluck()
      .get(client, callId) as string | undefined;
  }

  /** The spans of this name in rollouts received over OTLP (MassGen's `coordination.session`), oldest first. */
  otlpSpansNamed(name: string): Span[] {
    const rows = this.db
      .prepare(
        `SELECT s.* FROM spans s JOIN rollouts r ON r.id = s.rollout_id
      WHERE r.source = 'otlp' AND s.name = ?
      ORDER BY r.num, s.seq`,
      )
      .all(name) as SpanRowRaw[];
    return rows.map(toSpan);
  }

  /**
   * The chat calls a gateway captured for one session (X-Session-Id or a session base URL) between two
   * times (epoch ms, by when each call began), in the order they began.
   */
  gatewaySessionCalls(session: string, from: number, to: number): Span[] {
    const rows = this.db
      .prepare(
        `SELECT s.* FROM spans s JOIN rollouts r ON r.id = s.rollout_id
      WHERE r.source = 'gateway' AND ${jsonText(this.db, 'r.metadata', 'session')} = ?
        AND s.type = 'prompt' AND s.started_at >= ? AND s.started_at <= ?
      ORDER BY s.started_at, s.rollout_id, s.seq`,
      )
      .all(session, from, to) as SpanRowRaw[];
    return rows.map(toSpan);
  }

  /**
   * The policy decisions of one kind recorded by completed training-source rollouts (evaluation rollouts
   * decide greedily and are left out), in rollout then decision order, with what each rollout earned.
   */
  policyDecisions(policy: string, verifying: readonly string[] = REFERENCE_VERIFYING): PolicyDecisionRow[] {
    const rows = this.db
      .prepare(
        `SELECT s.rollout_id, r.num, s.seq, s.payload, r.total_reward, r.tokens,
        (SELECT MAX(value) FROM rewards w WHERE w.rollout_id = r.id AND w.channel = 'rollout' AND w.family IN ${sqlFamilies(verifying)}) AS verified
      FROM spans s JOIN rollouts r ON r.id = s.rollout_id
      WHERE s.type = 'coordination' AND s.name = 'policy_decision' AND ${jsonText(this.db, 's.payload', 'policy')} = ?
        AND r.status = 'completed' AND r.source <> 'eval'
      ORDER BY r.num, s.seq`,
      )
      .all(policy) as {
      rollout_id: string;
      num: number;
      seq: number;
      payload: string;
      total_reward: number | null;
      tokens: number;
      verified: number | null;
    }[];
    return rows.map((r) => ({
      rolloutId: r.rollout_id,
      rolloutNum: r.num,
      seq: r.seq,
      payload: JSON.parse(r.payload) as unknown,
      totalReward: r.total_reward,
      tokens: r.tokens,
      verified: r.verified,
    }));
  }
}

export interface PolicyDecisionRow {
  rolloutId: string;
  rolloutNum: number;
  seq: number;
  payload: unknown;
  totalReward: number | null;
  tokens: number;
  /** The best exact/numeric reward of the rollout's final answer (its verified correctness; an agent's own answers do not count), null when none scored. */
  verified: number | null;
}

/**
 * Spans of one rollout, buffered and written in batches. A flush nobody waits for (a full batch, the
 * timer) that meets a store locked by another process keeps the spans and retries with backoff; flush()
 * itself throws, keeping them too. Any other error of a timed flush is thrown by the next add or flush.
 */
export class SpanWriter {
  private buffer: unknown[][] = [];
  private timer: NodeJS.Timeout | undefined;
  private failure: unknown;
  /** Background flushes refused by a lock in a row; while non-zero, full batches wait for the retry. */
  private refusals = 0;

  constructor(
    private readonly repo: SpanRepository,
    readonly rolloutId: string,
    private lastSeq: number,
    private readonly batchSize: number,
    private readonly maxDelayMs?: number,
    private open?: () => void,
  ) {}

  add(span: SpanInput): number {
    this.rethrow();
    const seq = ++this.lastSeq;
    this.buffer.push([
      this.rolloutId,
      seq,
      span.parentSeq ?? null,
      span.type,
      span.name,
      this.repo.scrub(span.agent),
      span.startedAt ?? Date.now(),
      span.durationMs ?? 0,
      span.payloadJson === undefined
        ? this.repo.encodePayload(span.payload)
        : this.repo.encodePayloadJson(span.payloadJson, span.payload),
    ]);
    if (this.buffer.length >= this.batchSize && !this.refusals) this.flushOrRetry(true);
    else if (this.maxDelayMs !== undefined && !this.timer) this.schedule(this.maxDelayMs);
    return seq;
  }

  get pending(): number {
    return this.buffer.length;
  }

  /** Writes the waiting spans (and the rollout's row, if not written yet). On an error they stay buffered. */
  flush(): void {
    this.rethrow();
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.buffer.length && !this.open) return;
    const rows = this.buffer;
    this.buffer = [];
    try {
      this.repo.writeBatch(rows, this.open);
    } catch (err) {
      this.buffer = rows.concat(this.buffer);
      throw err;
    }
    this.open = undefined;
    this.refusals = 0;
  }

  /**
   * flush() inside the caller's transaction: returns what puts the spans (and the rollout's row) back in
   * the buffer if that transaction rolls back, so a later flush writes them again.
   */
  flushWithin(): () => void {
    const rows = this.buffer;
    const open = this.open;
    this.flush();
    return () => {
      this.buffer = rows.concat(this.buffer);
      this.open ??= open;
    };
  }

  /** Stops retrying in the background; what is buffered is dropped with the writer. */
  discard(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private flushOrRetry(fromAdd: boolean): void {
    try {
      this.repo.briefly(() => this.flush());
    } catch (err) {
      if (isBusy(err)) this.schedule(backoffMs(this.refusals++));
      else if (fromAdd) throw err;
      else this.failure = err;
    }
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.flushOrRetry(false), ms);
    this.timer.unref();
  }

  private rethrow(): void {
    if (this.failure === undefined) return;
    const err = this.failure;
    this.failure = undefined;
    throw err;
  }
}

export function toSpan(r: SpanRowRaw): Span {
  return {
    rolloutId: r.rollout_id,
    seq: r.seq,
    parentSeq: r.parent_seq,
    type: r.type,
    name: r.name,
    agent: r.agent,
    startedAt: r.started_at,
    durationMs: r.duration_ms,
    payload: JSON.parse(r.payload) as unknown,
  };
}
