import type { Writable } from 'node:stream';
import { UserError } from '../../errors.js';
import type { Runtime } from '../../runtime/runtime.js';
import {
  exportRollouts,
  type ExportOptions,
  type ExportResult,
  type Reward,
  type Rollout,
  type RolloutFilter,
  type Span,
} from '../../store/index.js';
import { writeExportFile } from './export-file.js';

export function listTraces(rt: Runtime, filter: RolloutFilter): { total: number; rollouts: Rollout[] } {
  const store = rt.existingStore();
  return { total: store.rollouts.count(filter), rollouts: store.rollouts.list(filter) };
}

export interface TraceDetail {
  rollout: Rollout;
  spans: Span[];
  rewards: Reward[];
}

export function showTrace(rt: Runtime, id: string): TraceDetail {
  const store = rt.existingStore();
  const rollout = store.rollouts.resolve(id);
  if (!rollout)
    throw new UserError(`no rollout "${id}" in ${rt.paths.storePath}`, 'list them with `massgen-rl traces list`');
  return { rollout, spans: store.spans.list(rollout.id), rewards: store.rewards.list(rollout.id) };
}

/** Exports matching rollouts as JSONL to a file (see writeExportFile: what may be overwritten, and how) or to the given stream. */
export async function exportTraces(
  rt: Runtime,
  filter: ExportOptions,
  out: string | Writable,
): Promise<ExportResult & { file?: string }> {
  const store = rt.existingStore();
  if (typeof out !== 'string') return exportRollouts(store, out, filter);
  return writeExportFile(out, (stream) => exportRollouts(store, stream, filter));
}
