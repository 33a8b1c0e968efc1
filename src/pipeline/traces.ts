import fs from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { UserError } from '../errors.js';
import { exportRollouts, type ExportResult, type Reward, type Rollout, type RolloutFilter, type Span } from '../store/index.js';
import type { Runtime } from '../runtime/runtime.js';

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
  if (!rollout) throw new UserError(`no rollout "${id}" in ${rt.paths.storePath}`, 'list them with `massgen-rl traces list`');
  return { rollout, spans: store.spans.list(rollout.id), rewards: store.rewards.list(rollout.id) };
}

/** Exports matching rollouts as JSONL to a file (written atomically) or to the given stream. */
export async function exportTraces(rt: Runtime, filter: Omit<RolloutFilter, 'offset'>, out: string | Writable): Promise<ExportResult & { file?: string }> {
  const store = rt.existingStore();
  if (typeof out !== 'string') return exportRollouts(store.db, out, filter);
  const file = path.resolve(out);
  const tmp = `${file}.tmp-${process.pid}`;
  let stream: fs.WriteStream;
  try {
    stream = fs.createWriteStream(tmp, { highWaterMark: 1 << 20 });
    await new Promise<void>((resolve, reject) => stream.once('open', () => resolve()).once('error', reject));
  } catch (err) {
    throw new UserError(`cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  try {
    const result = await exportRollouts(store.db, stream, filter);
    await new Promise<void>((resolve, reject) => stream.end(() => resolve()).once('error', reject));
    fs.renameSync(tmp, file);
    return { ...result, file };
  } catch (err) {
    stream.destroy();
    fs.rmSync(tmp, { force: true });
    throw err;
  }
}
