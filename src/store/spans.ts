import type { Db } from './database.js';
import type { Redactor } from './redact.js';
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

const INSERT = `INSERT INTO spans (rollout_id, seq, parent_seq, type, name, agent, started_at, duration_ms, payload)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`;

export class SpanRepository {
  private readonly insert;
  private readonly maxSeq;
  private readonly listStmt;
  private readonly insertAll: { immediate(rows: readonly unknown[][], open?: () => void): void };

  constructor(db: Db, private readonly redactor: Redactor) {
    this.insert = db.prepare(INSERT);
    this.insertAll = db.transaction((rows: readonly unknown[][], open?: () => void) => {
      open?.();
      for (const row of rows) this.insert.run(row);
    });
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
    this.insertAll.immediate(rows, open);
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
}

export class SpanWriter {
  private buffer: unknown[][] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly repo: SpanRepository,
    readonly rolloutId: string,
    private lastSeq: number,
    private readonly batchSize: number,
    private readonly maxDelayMs?: number,
    private open?: () => void,
  ) {}

  add(span: SpanInput): number {
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
      span.payloadJson === undefined ? this.repo.encodePayload(span.payload) : this.repo.encodePayloadJson(span.payloadJson, span.payload),
    ]);
    if (this.buffer.length >= this.batchSize) this.flush();
    else if (this.maxDelayMs !== undefined && !this.timer) {
      this.timer = setTimeout(() => this.flush(), this.maxDelayMs);
      this.timer.unref();
    }
    return seq;
  }

  get pending(): number {
    return this.buffer.length;
  }

  /** Writes the waiting spans (and the rollout's row, if not written yet). */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.buffer.length && !this.open) return;
    const rows = this.buffer;
    this.buffer = [];
    this.repo.writeBatch(rows, this.open);
    this.open = undefined;
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
