import os from 'node:os';
import type { Runtime } from '../../runtime/runtime.js';
import type { RunRecord } from '../../store/index.js';
import { stopLeftover } from '../../trainers/process-group.js';
import { lastCheckpoint, type TrainRunDetail } from '../../trainers/resume.js';

/** What becomes of a training run an interrupted cycle started: taken as it is, resumed, or started afresh. */
export type PriorRun = { taken: RunRecord } | { resume: string } | undefined;

/**
 * A run the same cycle started before it was interrupted: a completed one is taken; a stopped one with a checkpoint
 * is resumed (its trainer, if a killed parent left it running, stops first); a run over several machines starts
 * afresh, since the others hold no checkpoint to resume from.
 */
export async function priorRun(rt: Runtime, runId: string | undefined): Promise<PriorRun> {
  const prior = runId ? rt.store().trainingRuns.get(runId) : undefined;
  if (!prior) return undefined;
  if (prior.status === 'completed') return { taken: prior };
  const detail = prior.detail as unknown as TrainRunDetail | undefined;
  if (detail) await stopLeftover(detail.trainer_pid, detail.trainer_host, os.hostname());
  const stopped = prior.status === 'cancelled' || prior.status === 'failed';
  const resumable =
    rt.config.train.num_machines === 1 && stopped && detail?.output_dir && lastCheckpoint(detail.output_dir);
  return resumable ? { resume: prior.id } : undefined;
}
