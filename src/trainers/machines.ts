import type { TrainConfig } from '../config/schema.js';
import { machineIssues } from '../config/train-rules.js';
import { UserError } from '../errors.js';

/**
 * This machine's rank: `train --machine-rank` (so one config file serves every machine) or train.machine_rank,
 * checked against train.num_machines like the config's own value.
 */
export function machineRank(t: TrainConfig, override?: number): number {
  if (override === undefined) return t.machine_rank;
  const problem = machineIssues({ ...t, machine_rank: override }).find((i) => i.path.at(-1) === 'machine_rank');
  if (problem) throw new UserError(`--machine-rank ${override}: ${problem.message}`);
  return override;
}

/** Processes accelerate starts on this machine: train.num_processes counts those of every machine. */
export function processesPerMachine(t: TrainConfig, numProcesses = t.num_processes): number {
  return Math.max(1, Math.floor(numProcesses / t.num_machines));
}
