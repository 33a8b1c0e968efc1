import { storeRewards } from '../rewards/feedback.js';
import type { SpanWriter, Store } from '../store/index.js';
import { GATEWAY_SOURCE } from '../store/rollouts.js';
import type { RewardInput } from '../trace/records.js';
import { callSpan, type CapturedCall } from './call-span.js';
import { embeddingSpan } from './embedding-span.js';
import type { CaptureJournal } from './journal.js';
import type { Session, Sessions } from './sessions.js';

/** Calls made into spans between two turns of the event loop. */
const BUILD_SLICE = 32;

export interface CaptureOptions {
  flushMs: number;
  batchSize: number;
  /** rewards.weights: the total of a rollout that got feedback while its session was open. */
  weights?: Partial<Record<string, number>>;
  /** Where each call is appended the moment it completes, until its batch is in the store. */
  journal?: CaptureJournal;
  onError?: (err: unknown) => void;
}

export interface CaptureStats {
  captured: number;
  written: number;
  batches: number;
  pending: number;
  /** Time spent making spans and writing them (ms, the waits between slices left out). */
  writeMs: number;
  /** Writes the store refused (each tried again). */
  errors: number;
  /** Tokens of the captured calls per config model, as their usage reported them. */
  tokens: Map<string, { prompt: number; completion: number }>;
}

/**
 * Captured calls, written off the request path: queued in memory, then written in batches (one
 * transaction per batch: the new rollouts, the spans, the rollouts of sessions that ended) when
 * batchSize calls wait or the oldest has waited flushMs. close() ends every session and writes all.
 * A batch the store refuses stays queued and is tried again.
 */
export class Capture {
  private queue: CapturedCall[] = [];
  private readonly writers = new Map<string, SpanWriter>();
  /** Writers with spans not written yet. */
  private readonly dirty = new Set<SpanWriter>();
  /** Spans in the dirty writers. */
  private buffered = 0;
  private ending: Session[] = [];
  /** Feedback that reached a session between its finish's commit and its marking as done. */
  private late: { rolloutId: string; rewards: RewardInput[] }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  readonly stats: CaptureStats = {
    captured: 0,
    written: 0,
    batches: 0,
    pending: 0,
    writeMs: 0,
    errors: 0,
    tokens: new Map(),
  };

  constructor(
    private readonly store: Store,
    private readonly sessions: Sessions,
    private readonly opts: CaptureOptions,
  ) {}

  /** Queues the call; `journaled` runs once a kill can no longer lose it (its response may end then). */
  add(call: CapturedCall, journaled?: () => void): void {
    if (this.opts.journal) this.opts.journal.append(call, journaled);
    else journaled?.();
    this.queue.push(call);
    this.stats.captured++;
    this.stats.pending++;
    if (this.queue.length >= this.opts.batchSize) this.schedule(0);
    else if (!this.timer) this.schedule(this.opts.flushMs);
  }

  /** Writes what waits now (after any write under way). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.running = this.running
      .then(() => this.write())
      .catch((err: unknown) => {
        this.stats.errors++;
        this.opts.onError?.(err);
        if (this.waiting()) this.schedule(this.opts.flushMs);
      });
    return this.running;
  }

  /** Ends sessions idle past their timeout (their rollouts are finished by the next write). */
  sweep(): void {
    const ended = this.sessions.close();
    if (!ended.length) return;
    this.ending.push(...ended);
    if (!this.timer) this.schedule(this.opts.flushMs);
  }

  /** Ends every session and writes everything; throws when the store refuses the last write. */
  async close(): Promise<void> {
    this.ending.push(...this.sessions.close(true));
    await this.flush();
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.waiting()) await this.write();
    this.opts.journal?.close();
  }

  private waiting(): boolean {
    return this.queue.length > 0 || this.ending.length > 0 || this.dirty.size > 0 || this.late.length > 0;
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.flush(), ms);
  }

  private async write(): Promise<void> {
    const calls = this.queue;
    const ending = this.ending;
    const late = this.late;
    if (!this.waiting()) return;
    const segments = this.opts.journal?.rotate() ?? [];
    this.queue = [];
    this.ending = [];
    this.late = [];
    let t0 = performance.now();
    try {
      const production = calls.length ? (this.store.sets.pointer('production')?.setId ?? null) : null;
      for (let i = 0; i < calls.length; i++) {
        // spans are made (parsed, encoded, redacted) a slice at a time: requests in flight go on in between
        if (i > 0 && i % BUILD_SLICE === 0) {
          this.stats.writeMs += performance.now() - t0;
          await new Promise((resolve) => setImmediate(resolve));
          t0 = performance.now();
        }
        const call = calls[i]!;
        call.resourceSetId ??= production;
        const { span, usage } = call.kind === 'embeddings' ? embeddingSpan(call) : callSpan(call);
        call.session.tokens += usage.prompt + usage.completion;
        this.count(call.backend.name, usage);
        const w = this.writer(call.session, call.resourceSetId);
        w.add(span);
        this.buffered++;
        this.dirty.add(w);
      }
      this.stats.writeMs += performance.now() - t0;
      t0 = performance.now();
      const undo: (() => void)[] = [];
      try {
        await this.store.write(() => {
          for (const w of this.dirty) undo.push(w.flushWithin());
          for (const s of ending) this.finish(s, undo);
          for (const l of late) storeRewards(this.store, l.rolloutId, l.rewards, this.opts.weights ?? {});
        });
      } catch (err) {
        // rolled back: what the writers had flushed goes back in them, to be written by the next batch
        for (const u of undo.reverse()) u();
        throw err;
      }
    } catch (err) {
      // the spans stay in their writers; the sessions are ended again by the next write
      this.ending = ending.concat(this.ending);
      this.late = late.concat(this.late);
      throw err;
    } finally {
      this.stats.writeMs += performance.now() - t0;
    }
    this.dirty.clear();
    this.opts.journal?.committed(segments);
    for (const s of ending) {
      this.writers.delete(s.rolloutId);
      s.done = true;
      const after = s.feedback.slice(s.feedbackStored);
      s.feedback = [];
      if (after.length) {
        this.late.push({ rolloutId: s.rolloutId, rewards: after });
        this.schedule(0);
      }
    }
    this.stats.written += this.buffered;
    this.stats.pending -= this.buffered;
    this.buffered = 0;
    this.stats.batches++;
  }

  private writer(s: Session, resourceSetId?: string | null): SpanWriter {
    let w = this.writers.get(s.rolloutId);
    if (!w) {
      const row = {
        id: s.rolloutId,
        source: GATEWAY_SOURCE,
        metadata: s.metadata,
        resourceSetId: resourceSetId ?? undefined,
      };
      const open = s.fresh ? this.store.rollouts.prepare(row).insert : undefined;
      s.fresh = false;
      w = this.store.spans.writer(s.rolloutId, Number.POSITIVE_INFINITY, undefined, open);
      this.writers.set(s.rolloutId, w);
    }
    return w;
  }

  private finish(s: Session, undo: (() => void)[]): void {
    undo.push(this.writer(s).flushWithin());
    this.store.rollouts.finish(s.rolloutId, {
      status: 'completed',
      tokens: s.tokens,
      messages: s.calls,
      // wall-clock times: a clock stepped back between its calls (NTP) would make it negative
      wallMs: Math.max(0, s.lastAt - s.startedAt),
    });
    // a fresh writer: its sequence numbers follow what was just flushed, and a retried write adds no span twice
    s.feedbackStored = s.feedback.length;
    if (s.feedbackStored) storeRewards(this.store, s.rolloutId, s.feedback, this.opts.weights ?? {});
  }

  private count(model: string, usage: { prompt: number; completion: number }): void {
    const t = this.stats.tokens.get(model);
    if (t) {
      t.prompt += usage.prompt;
      t.completion += usage.completion;
    } else this.stats.tokens.set(model, { ...usage });
  }
}
