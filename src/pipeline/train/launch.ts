import net from 'node:net';
import path from 'node:path';
import type { TrainConfig } from '../../config/schema.js';
import type { Algo } from '../../datasets/types.js';
import { TRAINERS_DIR } from '../../python/module.js';
import { trainerCommand, type TrainerCommand } from '../../trainers/runner.js';

export interface LaunchInput {
  python: string;
  train: TrainConfig;
  algo: Algo;
  configFile: string;
  cpu: boolean;
  baseDir: string;
  numProcesses: number;
}

/** Several CPU processes on one machine: torchrun + gloo through the bundled accelerate config. */
export const CPU_ACCELERATE_CONFIG = path.join(TRAINERS_DIR, 'accelerate', 'cpu-2proc.yaml');

/**
 * The trainer's argument array: the bundled module for the algorithm or train.script, run directly or,
 * for several processes (or an accelerate config), through accelerate on a free rendezvous port.
 */
export async function launchCommand(input: LaunchInput): Promise<TrainerCommand> {
  const t = input.train;
  const script = t.script ? path.resolve(input.baseDir, t.script) : undefined;
  const configured = t.accelerate_config ? path.resolve(input.baseDir, t.accelerate_config) : null;
  const accelerateConfig = configured ?? (input.numProcesses > 1 && input.cpu ? CPU_ACCELERATE_CONFIG : null);
  const cmd = trainerCommand({
    python: input.python, module: script ? undefined : input.algo, script, configFile: input.configFile,
    numProcesses: input.numProcesses, accelerateConfig,
  });
  if (cmd.args[1] !== 'accelerate.commands.launch') return cmd;
  const port = await freePort();
  return { command: cmd.command, args: [...cmd.args.slice(0, 2), '--main_process_port', String(port), ...cmd.args.slice(2)] };
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
