export { Store, type StoreOptions, type StoreStats } from './store.js';
export { Redactor, REDACTED, type RedactionSettings } from './redact.js';
export { SpanWriter } from './spans.js';
export { exportRollouts, type ExportOptions, type ExportResult } from './export.js';
export { LATEST_SCHEMA_VERSION } from './migrations.js';
export type { Resource, ResourceKind, ResourceInput } from './resources.js';
export type { RunRecord, RunKind } from './runs.js';
export type { StoredTask, TaskFilter, UpsertResult } from './tasks.js';
export * from './types.js';
