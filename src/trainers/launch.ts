import net from 'node:net';
import path from 'node:path';
import type { Algo, TrainConfig } from '../config/schema.js';
import { UserError } from '../errors.js';
import { PYTHON_DIR } from '../python/module.js';

/** Where the bundled trainers live: `python -m massgen_rl_training.<algo>`. */
export const TRAINER_PACKAGE = 'massgen_rl_training';

export interface TrainerCommandOptions {
  /** The trainer venv's interpreter. */
  python: string;
  /** A bundled trainer (`grpo` → `massgen_rl_training.grpo`), or a full module name (contains a dot). */
  module?: string;
  /** A user trainer script speaking the protocol (train.script); used instead of module. */
  script?: string;
  /** The trainer config YAML, passed as `--config`. */
  configFile: string;
  /** > 1, or an accelerate config file, launches through accelerate: the processes of all machines together. */
  numProcesses?: number;
  accelerateConfig?: string | null;
  /** Force accelerate's CPU mode (`--cpu`); only used when launching through accelerate. */
  cpu?: boolean;
  /** The rendezvous port on machine 0 (accelerate's --main_process_port). */
  mainProcessPort?: number;
  /** Training over several machines: this one's part. */
  machines?: Machines;
}

/** Where this machine stands among those training together (accelerate's --num_machines and friends). */
export interface Machines {
  count: number;
  rank: number;
  mainIp: string;
}

export interface TrainerCommand {
  command: string;
  args: string[];
}

/**
 * The argument array for a trainer run:
 *   python -m massgen_rl_training.<algo> --config F
 *   python script.py --config F
 *   python -m accelerate.commands.launch [--main_process_port P] --num_processes N [--config_file A] [--cpu]
 *     [--multi_gpu] [--num_machines M --machine_rank R --main_process_ip IP] (-m module | script.py) --config F
 * (`accelerate launch` without relying on the console script: `-m` is accelerate's flag to run the
 * training script as a module; everything after the script belongs to the trainer.) N counts the processes
 * of every machine: accelerate starts N / M on each.
 */
export function trainerCommand(opts: TrainerCommandOptions): TrainerCommand {
  if (Boolean(opts.module) === Boolean(opts.script))
    throw new Error('trainerCommand: give exactly one of module or script');
  const n = opts.numProcesses ?? 1;
  if (!Number.isInteger(n) || n < 1) throw new UserError(`train.num_processes ${n}: expected a whole number ≥ 1`);
  const m = opts.machines && opts.machines.count > 1 ? opts.machines : undefined;
  if (m && (n % m.count || m.rank < 0 || m.rank >= m.count))
    throw new Error(`trainerCommand: ${n} processes, machine ${m.rank} of ${m.count}`);
  const module = opts.module && (opts.module.includes('.') ? opts.module : `${TRAINER_PACKAGE}.${opts.module}`);
  const target = module ? ['-m', module] : [opts.script!];
  const trainerArgs = ['--config', opts.configFile];
  if (n === 1 && !opts.accelerateConfig) return { command: opts.python, args: [...target, ...trainerArgs] };
  const launch = ['-m', 'accelerate.commands.launch'];
  if (opts.mainProcessPort !== undefined) launch.push('--main_process_port', String(opts.mainProcessPort));
  launch.push('--num_processes', String(n));
  if (opts.accelerateConfig) launch.push('--config_file', opts.accelerateConfig);
  if (opts.cpu) launch.push('--cpu');
  if (m) {
    // Without a config file accelerate picks torchrun (which joins machines) only when it sees several GPUs here.
    if (!opts.accelerateConfig && !opts.cpu) launch.push('--multi_gpu');
    launch.push('--num_machines', String(m.count), '--machine_rank', String(m.rank), '--main_process_ip', m.mainIp);
  }
  return { command: opts.python, args: [...launch, ...target, ...trainerArgs] };
}

/**
 * CUDA_VISIBLE_DEVICES for train.gpus: 'auto' leaves the environment alone (every GPU the trainer can
 * see), 'none' hides all GPUs (CPU training), '0,1' selects those devices.
 */
export function gpuEnv(gpus: string): NodeJS.ProcessEnv {
  if (gpus === 'auto') return {};
  if (gpus === 'none') return { CUDA_VISIBLE_DEVICES: '' };
  const ids = gpus.split(',').map((s) => s.trim());
  if (!ids.length || ids.some((id) => !/^\d+$/.test(id))) {
    throw new UserError(
      `train.gpus "${gpus}": expected auto, none, or a comma-separated list of GPU indices such as 0,1`,
    );
  }
  if (new Set(ids).size !== ids.length) throw new UserError(`train.gpus "${gpus}": a GPU index is listed twice`);
  return { CUDA_VISIBLE_DEVICES: ids.join(',') };
}

export interface LaunchInput {
  python: string;
  train: TrainConfig;
  algo: Algo;
  configFile: string;
  cpu: boolean;
  baseDir: string;
  numProcesses: number;
  /** This machine's rank (train.machine_rank, or the `--machine-rank` override). */
  machineRank?: number;
}

/** Several CPU processes on one machine: torchrun + gloo through the bundled accelerate config. */
export const CPU_ACCELERATE_CONFIG = path.join(PYTHON_DIR, 'accelerate', 'cpu-2proc.yaml');
/** accelerate's own default rendezvous port, used over several machines when train.main_process_port is unset. */
export const DEFAULT_MAIN_PROCESS_PORT = 29500;

/**
 * The trainer's argument array: the bundled module for the algorithm or train.script, run directly or,
 * for several processes (or an accelerate config), through accelerate: on one machine on train.main_process_port
 * or a free port; over several, every machine meets machine 0 at train.main_process_ip and that port.
 */
export async function launchCommand(input: LaunchInput): Promise<TrainerCommand> {
  const t = input.train;
  const script = t.script ? path.resolve(input.baseDir, t.script) : undefined;
  const configured = t.accelerate_config ? path.resolve(input.baseDir, t.accelerate_config) : null;
  const accelerateConfig = configured ?? (input.numProcesses > 1 && input.cpu ? CPU_ACCELERATE_CONFIG : null);
  const several = t.num_machines > 1;
  const machines = several
    ? { count: t.num_machines, rank: input.machineRank ?? t.machine_rank, mainIp: t.main_process_ip! }
    : undefined;
  const base = {
    python: input.python,
    module: script ? undefined : input.algo,
    script,
    configFile: input.configFile,
    numProcesses: input.numProcesses,
    accelerateConfig,
    machines,
  };
  const cmd = trainerCommand(base);
  if (cmd.args[1] !== 'accelerate.commands.launch') return cmd;
  const mainProcessPort = t.main_process_port ?? (several ? DEFAULT_MAIN_PROCESS_PORT : await freePort());
  return trainerCommand({ ...base, mainProcessPort });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
