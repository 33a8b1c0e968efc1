import { UserError } from '../../errors.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { RolloutFilter } from '../../store/index.js';
import { exportPending, targetKey, type OtlpExportResult } from '../../telemetry/otlp-export.js';

export interface OtlpBackfill {
  /** The OTLP/HTTP traces endpoint (default telemetry.otlp.endpoint). */
  endpoint?: string;
  protocol?: 'protobuf' | 'json';
  /** Send every matching rollout again, not only those the endpoint has not acknowledged. */
  again?: boolean;
  filter: RolloutFilter;
  signal?: AbortSignal;
}

/**
 * `traces export --otlp`: the finished rollouts matching the filter that the endpoint has not acknowledged, as OTLP
 * spans (telemetry.otlp's protocol, headers and project). Run again after a refusal, it sends only the rest.
 */
export async function exportTracesOtlp(rt: Runtime, o: OtlpBackfill): Promise<OtlpExportResult & { already: number }> {
  const otlp = rt.config.telemetry.otlp;
  const endpoint = o.endpoint ?? otlp.endpoint;
  if (!endpoint)
    throw new UserError(
      '--otlp: no endpoint',
      'pass the URL (--otlp http://127.0.0.1:6006/v1/traces) or set telemetry.otlp.endpoint',
    );
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new UserError(`--otlp ${endpoint}: not a URL`, 'e.g. --otlp http://127.0.0.1:6006/v1/traces');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UserError(`--otlp ${endpoint}: expected an http:// or https:// URL`);
  const store = rt.existingStore();
  const key = targetKey(endpoint);
  if (o.again) await store.write(() => store.otlpExports.forget(key));
  const already = store.otlpExports.acknowledged(key);
  const { limit, offset: _, ...filter } = o.filter;
  const result = await exportPending(
    store,
    { ...otlp, endpoint, protocol: o.protocol ?? otlp.protocol },
    { filter, limit, signal: o.signal },
  );
  if (result.failed)
    throw new UserError(
      `${key} refused the export after ${result.rollouts} rollout(s): ${result.failed}`,
      'what it acknowledged is recorded: run the same command again to send the rest',
    );
  return { ...result, already };
}
