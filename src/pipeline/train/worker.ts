import type { Algo } from '../../config/schema.js';
import { InterruptedError, UserError } from '../../errors.js';
import { pythonEnv } from '../../python/module.js';
import type { Runtime } from '../../runtime/runtime.js';
import { launchCommand } from '../../trainers/launch.js';
import { machineRank, processesPerMachine } from '../../trainers/machines.js';
import { requireVenv, selectDevices } from '../../trainers/preflight.js';
import { gpuEnv, runTrainer } from '../../trainers/runner.js';
import { checkRoom, newRun, withTrainerConfig, type TrainOptions } from './train.js';

export interface TrainWorkerOptions extends Pick<
  TrainOptions,
  'algo' | 'all' | 'from' | 'maxSteps' | 'signal' | 'onStage' | 'env'
> {
  /** This machine's rank, 1 to train.num_machines - 1 (default train.machine_rank). */
  machineRank?: number;
}

export interface TrainWorkerResult {
  machineRank: number;
  numMachines: number;
  /** Trainer processes on this machine. */
  processes: number;
  algo: string;
  dataset: { hash: string; rows: number };
  durationMs: number;
  logFile: string;
}

/**
 * A machine other than 0 of a multi-machine run: builds the same dataset and trainer config as machine 0 does
 * (from this machine's copy of the project and store; the trainer checks that every process has the same data and
 * settings), runs its share of the trainer processes, and ends as machine 0's trainer does: done when it finished,
 * stopped when it was stopped, failed when any process failed. It records nothing in the store: the run, its
 * metrics and its checkpoint are machine 0's.
 */
export async function trainWorker(rt: Runtime, opts: TrainWorkerOptions = {}): Promise<TrainWorkerResult> {
  const t = rt.config.train;
  const rank = machineRank(t, opts.machineRank);
  if (rank === 0)
    throw new UserError('machine 0 is the main machine: it runs `massgen-rl train`, which records the run');
  const python = await requireVenv(rt.paths.venvDir);
  if (!rt.storeExists())
    throw new UserError(
      `machine ${rank} builds its share of the dataset from the same traces as machine 0, but there is no store at ${rt.paths.storePath}`,
      'copy the project with its data dir from machine 0, or share it',
    );
  const store = rt.existingStore();
  const devices = await selectDevices(t.gpus);
  const prepared = await newRun(rt, store, devices.cpu, { ...opts, python }, `-machine${rank}`);
  const { detail } = prepared;
  checkRoom(rt, prepared, devices, true);
  const command = await launchCommand({
    python,
    train: t,
    configFile: detail.config_file,
    algo: detail.algo as Algo,
    cpu: devices.cpu,
    baseDir: rt.paths.baseDir,
    numProcesses: t.num_processes,
    machineRank: rank,
  });
  // Online GRPO: this machine's processes score their samples through a bridge of their own.
  return withTrainerConfig(rt, store, prepared, opts.signal, async () => {
    opts.onStage?.(
      `machine ${rank} of ${t.num_machines}: training ${detail.algo} on ${detail.dataset.rows} examples with machine 0 at ${t.main_process_ip} (log ${detail.log_file})`,
    );
    const outcome = await runTrainer({
      ...command,
      env: pythonEnv({ ...gpuEnv(t.gpus), ...opts.env }),
      logFile: detail.log_file,
      signal: opts.signal,
      timeoutMs: t.timeout_min ? t.timeout_min * 60_000 : undefined,
      onEvent: (ev) => {
        if (ev.event === 'progress') opts.onStage?.(ev.message);
      },
    });
    // Processes other than machine 0's first emit no done event: a clean exit is this machine's success.
    if (outcome.exitCode === 0 && !outcome.timedOut) {
      return {
        machineRank: rank,
        numMachines: t.num_machines,
        processes: processesPerMachine(t),
        algo: detail.algo,
        dataset: { hash: detail.dataset.hash, rows: detail.dataset.rows },
        durationMs: outcome.durationMs,
        logFile: detail.log_file,
      };
    }
    if (outcome.status === 'interrupted')
      throw new InterruptedError(
        `training stopped on machine ${rank}; machine 0 saved the checkpoint and recorded the run`,
      );
    throw new UserError(
      `the ${detail.algo} trainer on machine ${rank} failed: ${outcome.error ?? `exit code ${outcome.exitCode}`}`,
      `full log: ${detail.log_file}; see machine 0's log too`,
    );
  });
}
