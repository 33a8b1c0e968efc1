import type { CaptureStats } from './capture.js';
import { Counter, Histogram, sampled } from './prom-text.js';

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const TTFT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The routes counted by name; anything else is `other`, so a scan of made-up paths adds no series. */
export const ROUTES = [
  '/health',
  '/metrics',
  '/v1/models',
  '/v1/chat/completions',
  '/v1/embeddings',
  '/v1/feedback',
] as const;

/** What one request's metrics need, filled in as it is handled. */
export interface RequestRecord {
  route: string;
  /** The config model it was routed to ('' when none was). */
  model: string;
  /** Seconds to the first token of a streamed completion, when it had one. */
  ttftS?: number;
  /** The status to count instead of the response's (499: the client left during a stream). */
  status?: number;
  /** The arm that answered a model request: production, or the canary (deploy --canary). */
  arm?: 'production' | 'canary';
}

/** Where the values read at scrape time come from. */
export interface MetricSources {
  capture: CaptureStats;
  openSessions: () => number;
  /** Captured calls no journal file took (a full disk on both): a kill before their batch is stored loses them. */
  unjournaled?: () => number;
}

/**
 * The gateway's metrics: requests by route, model and status; latency and time to first token per
 * model; tokens in and out per model (counted when the calls are captured, so up to flush_ms behind);
 * the capture queue, rows written, write errors, calls not journaled, open sessions.
 */
export class GatewayMetrics {
  private readonly requests = new Counter(
    'massgen_gateway_requests_total',
    'Requests answered, by route, model and HTTP status (499: the client closed the connection first).',
  );
  private readonly latency = new Histogram(
    'massgen_gateway_request_duration_seconds',
    "Time from a model request's arrival to the end of its answer (a stream's last byte), per route and model.",
    LATENCY_BUCKETS,
  );
  private readonly ttft = new Histogram(
    'massgen_gateway_time_to_first_token_seconds',
    'Time from sending a streamed chat request to its backend to its first token, per model.',
    TTFT_BUCKETS,
  );

  private readonly arms = new Counter(
    'massgen_gateway_arm_requests_total',
    'Model requests answered, by arm: production, or the canary serving its share of sessions.',
  );

  constructor(private readonly sources: MetricSources) {}

  record(rec: RequestRecord, status: number, seconds: number): void {
    const route = (ROUTES as readonly string[]).includes(rec.route) ? rec.route : 'other';
    this.requests.inc({ route, model: rec.model, status: String(rec.status ?? status) });
    if (rec.model === '') return;
    if (rec.arm) this.arms.inc({ arm: rec.arm });
    this.latency.observe({ route, model: rec.model }, seconds);
    if (rec.ttftS !== undefined) this.ttft.observe({ model: rec.model }, rec.ttftS);
  }

  render(): string {
    const c = this.sources.capture;
    const tokens = [...c.tokens];
    return [
      this.requests.render(),
      this.latency.render(),
      this.ttft.render(),
      this.arms.render(),
      sampled(
        'massgen_gateway_prompt_tokens_total',
        'Prompt (input) tokens of the captured calls, per model.',
        'counter',
        tokens.map(([model, t]) => [{ model }, t.prompt]),
      ),
      sampled(
        'massgen_gateway_completion_tokens_total',
        'Completion (output) tokens of the captured calls, per model.',
        'counter',
        tokens.map(([model, t]) => [{ model }, t.completion]),
      ),
      sampled('massgen_gateway_capture_queue_depth', 'Captured calls waiting to be written to the store.', 'gauge', [
        [{}, c.pending],
      ]),
      sampled('massgen_gateway_captured_rows_total', 'Captured calls written to the store as spans.', 'counter', [
        [{}, c.written],
      ]),
      sampled(
        'massgen_gateway_capture_write_errors_total',
        'Capture writes the store refused (each tried again).',
        'counter',
        [[{}, c.errors]],
      ),
      sampled(
        'massgen_gateway_capture_unjournaled_total',
        'Captured calls no journal file took (the disk full); kept only once their batch is in the store.',
        'counter',
        [[{}, this.sources.unjournaled?.() ?? 0]],
      ),
      sampled('massgen_gateway_open_sessions', 'Sessions open (their rollouts not finished yet).', 'gauge', [
        [{}, this.sources.openSessions()],
      ]),
    ].join('');
  }
}
