import { GateError } from '../../errors.js';
import type { Runtime } from '../../runtime/runtime.js';
import { copyStore, type CopyProgress, type CopyResult } from '../../store/index.js';

export interface StoreCopyOptions {
  /** A postgres:// URL or a SQLite file path (relative to the working directory). */
  to: string;
  /** The environment variable holding the target's PostgreSQL password (default: store.password_env). */
  passwordEnv?: string;
  batchSize?: number;
  signal?: AbortSignal;
  onProgress?: (p: CopyProgress) => void;
}

/** Copies the configured store (store.url or store.path) to another backend or file, resumably, and verifies it. */
export function copyStoreTo(rt: Runtime, opts: StoreCopyOptions): Promise<CopyResult> {
  const source = rt.existingStore();
  return copyStore(source, opts.to, {
    passwordEnv: opts.passwordEnv ?? rt.config.store.password_env,
    busyTimeoutMs: rt.config.store.busy_timeout_ms,
    batchSize: opts.batchSize,
    signal: opts.signal,
    onProgress: opts.onProgress,
  });
}

/** Exit 1 naming the tables whose rows differ. */
export function mismatch(r: CopyResult): GateError {
  const bad = r.tables
    .filter((t) => !t.ok)
    .map((t) => `${t.table} (${t.sourceRows} rows in the source, ${t.targetRows} in the target)`);
  return new GateError(
    `the copy at ${r.target} differs from the source in ${bad.join(', ')}`,
    'did something write to the source while it was copied? The target keeps its progress: run the copy again to re-check, or copy into an empty target',
  );
}
