import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../errors.js';
import type { Store } from '../store/index.js';
import type { RunRecord } from '../store/runs.js';

/** What a training run records in its detail column: enough to resume it and to register its checkpoint. */
export interface TrainRunDetail {
  algo: string;
  start: {
    ref: string;
    line: string;
    dir: string;
    adapter: boolean;
    base_dir: string | null;
    resource_id: string | null;
    checkpoint_id: string | null;
    watermark: number;
  };
  dataset: { dir: string; hash: string; rows: number; watermark: { from: number; to: number }; reused: boolean };
  config_file: string;
  config_hash: string;
  output_dir: string;
  log_file: string;
  num_processes: number;
  /** Machines the run trained on, when more than one (this record and the checkpoint are machine 0's). */
  num_machines?: number;
  resumed_from?: string;
  resume_checkpoint?: string;
  /** The role of config `roles` the run trains (its line is start.line). */
  role?: string;
  /** The trainer process (group leader) and its host, recorded when it starts. */
  trainer_pid?: number;
  trainer_host?: string;
}

export interface Resumable {
  run: RunRecord;
  detail: TrainRunDetail;
  /** The newest checkpoint-<step> folder the trainer saved. */
  checkpoint: string;
}

/**
 * The run `--resume` continues: the given one, else the newest stopped or failed run whose output
 * folder holds a checkpoint and that no later run (a resumption writing to the same folder) completed.
 */
export function findResumable(store: Store, ref?: string): Resumable {
  const runs = store.trainingRuns.latest(500);
  if (ref) {
    const run = runs.find((r) => r.id === ref || r.id.startsWith(ref));
    if (!run)
      throw new UserError(`--resume ${ref}: no training run with this id`, 'see `massgen-rl status` for recent runs');
    const found = resumable(run, runs);
    if (typeof found === 'string') throw new UserError(found);
    return found ?? fail(`training run ${run.id} is ${run.status} and has no checkpoint to continue from`);
  }
  for (const run of runs) {
    if (run.status !== 'cancelled' && run.status !== 'failed') continue;
    const found = resumable(run, runs);
    if (found && typeof found !== 'string') return found;
  }
  return fail('there is no stopped training run with a checkpoint to resume');
}

/** The run (or its latest resumption) to continue, undefined when it has no checkpoint, or why it cannot be resumed. */
function resumable(run: RunRecord, runs: RunRecord[]): Resumable | string | undefined {
  const detail = run.detail as unknown as TrainRunDetail;
  if (!detail.output_dir || !detail.config_file) return undefined;
  const newest = runs.find((r) => (r.detail as unknown as TrainRunDetail).output_dir === detail.output_dir);
  if (newest && newest.id !== run.id) {
    if (newest.status === 'completed')
      return `training run ${run.id} was already resumed and completed by ${newest.id}`;
    if (newest.status === 'running') return `training run ${run.id} is being resumed by ${newest.id}, still running`;
    return resumable(newest, runs);
  }
  if (run.status === 'running') return `training run ${run.id} is still running`;
  if (run.status === 'completed') return undefined;
  const checkpoint = lastCheckpoint(detail.output_dir);
  return checkpoint ? { run, detail, checkpoint } : undefined;
}

/**
 * The checkpoint-<step> folder with the highest step whose trainer state is whole. The trainer writes that file
 * last, in place: a save cut short (the disk full, a kill) leaves it empty or truncated, and resuming from that
 * folder would fail the same way on every later try.
 */
export function lastCheckpoint(outputDir: string): string | undefined {
  if (!fs.existsSync(outputDir)) return undefined;
  const steps = fs
    .readdirSync(outputDir)
    .map((name) => /^checkpoint-(\d+)$/.exec(name))
    .filter((m): m is RegExpExecArray => m !== null && wholeState(path.join(outputDir, m[0], 'trainer_state.json')))
    .sort((a, b) => Number(b[1]) - Number(a[1]));
  return steps[0] && path.join(outputDir, steps[0][0]);
}

function wholeState(file: string): boolean {
  try {
    const state = JSON.parse(fs.readFileSync(file, 'utf8')) as { global_step?: unknown };
    return typeof state.global_step === 'number';
  } catch {
    return false;
  }
}

function fail(message: string): never {
  throw new UserError(message, 'start a new run with `massgen-rl train` instead');
}
