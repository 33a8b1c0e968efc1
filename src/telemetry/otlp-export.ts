import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter as HttpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import type { TelemetryConfig } from '../config/schema.js';
import type { RolloutFilter, Store } from '../store/index.js';
import { rolloutSpans } from './span-map.js';

export type OtlpTarget = Omit<TelemetryConfig['otlp'], 'endpoint' | 'interval_ms'> & { endpoint: string };

export interface OtlpExportResult {
  /** Where (the endpoint without credentials): what the store records as acknowledged. */
  target: string;
  rollouts: number;
  spans: number;
  requests: number;
  /** Why the export stopped before the end (what was not acknowledged stays pending); null when it finished. */
  failed: string | null;
}

/** The endpoint as the store records it: without user name, password or query (which may hold a key). */
export function targetKey(endpoint: string): string {
  const url = new URL(endpoint);
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/** The result of a pass that sent nothing because `why` (the store or the thread failed before any request). */
export function failedExport(target: Pick<OtlpTarget, 'endpoint'>, why: string): OtlpExportResult {
  return { target: targetKey(target.endpoint), rollouts: 0, spans: 0, requests: 0, failed: why };
}

/** What a failed export says: the HTTP status and body, or the network error. */
function failure(result: ExportResult): string {
  const e = result.error as (Error & { code?: number | string; data?: string }) | undefined;
  if (!e) return 'the export failed';
  const body = e.data ? `: ${String(e.data).slice(0, 200)}` : '';
  return e.code !== undefined ? `${e.code} ${e.message}${body}` : e.message;
}

/** An OTLP/HTTP trace exporter (the official one: protobuf or JSON bodies, its own retries within timeout_ms). */
export function otlpExporter(target: OtlpTarget): {
  send(spans: ReadableSpan[]): Promise<string | null>;
  close(): Promise<void>;
} {
  const options = { url: target.endpoint, headers: target.headers, timeoutMillis: target.timeout_ms };
  const exporter = target.protocol === 'json' ? new HttpJsonExporter(options) : new ProtobufExporter(options);
  return {
    send: (spans) =>
      new Promise((resolve) =>
        exporter.export(spans, (r) => resolve(r.code === ExportResultCode.SUCCESS ? null : failure(r))),
      ),
    close: () => exporter.shutdown(),
  };
}

/**
 * Sends the finished rollouts `target` has not acknowledged (matching `filter`), oldest first, `batch_rollouts` per
 * request, and records each acknowledged batch: run again, it continues where it stopped; a span sent twice keeps
 * its id. Stops at the first request the collector refuses (after the exporter's retries) or at `signal`.
 */
export async function exportPending(
  store: Store,
  target: OtlpTarget,
  opts: { filter?: Omit<RolloutFilter, 'offset' | 'limit'>; limit?: number; signal?: AbortSignal } = {},
): Promise<OtlpExportResult> {
  const key = targetKey(target.endpoint);
  const resource = resourceFromAttributes({
    'service.name': target.project,
    'openinference.project.name': target.project,
  });
  const exporter = otlpExporter(target);
  const result: OtlpExportResult = { target: key, rollouts: 0, spans: 0, requests: 0, failed: null };
  let after = 0;
  let remaining = opts.limit ?? Number.POSITIVE_INFINITY;
  try {
    while (remaining > 0 && !opts.signal?.aborted) {
      const page = store.otlpExports.pending(key, opts.filter ?? {}, after, Math.min(target.batch_rollouts, remaining));
      if (!page.traces.length) break;
      const perRollout = page.traces.map((t) => rolloutSpans(t, resource));
      const spans = perRollout.flat();
      result.requests++;
      const failed = await exporter.send(spans);
      if (failed) {
        result.failed = failed;
        break;
      }
      const sent = page.traces.map((t, i) => ({ rolloutId: t.rollout.id, spans: perRollout[i]!.length }));
      await store.write(() => store.otlpExports.acknowledge(key, sent));
      result.rollouts += sent.length;
      result.spans += spans.length;
      remaining -= sent.length;
      after = page.last;
    }
  } finally {
    await exporter.close();
  }
  return result;
}
