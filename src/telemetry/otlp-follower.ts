import type { TelemetryConfig } from '../config/schema.js';
import type { Store, StoreOptions } from '../store/index.js';
import type { OtlpExportResult } from './otlp-export.js';
import { passesFor, type Passes } from './otlp-passes.js';

export interface FollowerOptions {
  /** Told once per outage (and once when the collector answers again), never on every failed attempt. */
  onWarn?: (message: string) => void;
  /** How the export thread opens the store itself; without them the passes run on the caller's thread. */
  storeOptions?: Omit<StoreOptions, 'redactor'>;
  /** The export thread's compiled module (null: the caller's thread). */
  workerUrl?: URL | null;
}

/**
 * The continuous export: every interval_ms, the finished rollouts the endpoint has not acknowledged go out in the
 * background (the store is the queue: what a dead collector refused stays pending for the next attempt or command).
 * stop() makes one last attempt, bounded by timeout_ms, and none when the collector was failing: a dead collector
 * costs a run nothing beyond the requests already under way. The passes run on a worker thread with its own store
 * connection where it can (the built CLI), so that encoding spans never holds up the run's own work.
 */
export class OtlpFollower {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private failing = false;
  private stopped = false;
  private readonly passes: Passes;
  readonly totals = { rollouts: 0, spans: 0, requests: 0, failures: 0 };

  constructor(
    store: Store,
    private readonly otlp: TelemetryConfig['otlp'] & { endpoint: string },
    private readonly opts: FollowerOptions = {},
  ) {
    this.passes = passesFor(store, otlp, opts.storeOptions, opts.workerUrl);
  }

  /** Where the passes run: 'worker' (a thread of their own) or 'main'. */
  get thread(): Passes['thread'] {
    return this.passes.thread;
  }

  start(): this {
    this.timer ??= setInterval(() => void this.tick(), this.otlp.interval_ms).unref();
    return this;
  }

  /** One pass now (unless one is under way): everything pending, in batches. */
  tick(): Promise<void> {
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<void> {
    const r: OtlpExportResult = await this.passes.run();
    this.totals.rollouts += r.rollouts;
    this.totals.spans += r.spans;
    this.totals.requests += r.requests;
    if (r.failed) {
      this.totals.failures++;
      if (!this.failing)
        this.opts.onWarn?.(`telemetry: ${r.target} refused the export (${r.failed}); the rollouts wait in the store`);
    } else if (this.failing) this.opts.onWarn?.(`telemetry: ${r.target} takes exports again`);
    this.failing = Boolean(r.failed);
  }

  /** Stops following: waits for the pass under way, then a last one unless the collector was failing. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const deadline = new Promise<void>((resolve) => setTimeout(resolve, this.otlp.timeout_ms).unref());
    await Promise.race([this.running, deadline]);
    if (!this.failing && !this.stopped) await Promise.race([this.tick(), deadline]);
    this.stopped = true;
    this.passes.abort();
    await this.running?.catch(() => undefined);
    await this.passes.close(this.otlp.timeout_ms);
  }
}
