import { Command, Option } from 'commander';
import type { Redactor } from '../store/redact.js';
import { registerCheckpoints } from './commands/checkpoints.js';
import { registerCollect } from './commands/collect.js';
import { registerDeploy } from './commands/deploy.js';
import { registerDoctor } from './commands/doctor.js';
import { registerEval } from './commands/eval.js';
import { registerFeedback } from './commands/feedback.js';
import { registerGateway } from './commands/gateway.js';
import { registerInit } from './commands/init.js';
import { registerLoop } from './commands/loop.js';
import { registerReport } from './commands/report.js';
import { registerResources } from './commands/resources.js';
import { registerReview } from './commands/review.js';
import { registerRewards } from './commands/rewards.js';
import { registerServe } from './commands/serve.js';
import { registerStatus } from './commands/status.js';
import { registerStore } from './commands/store.js';
import { registerTasks } from './commands/tasks.js';
import { registerTraces } from './commands/traces.js';
import { registerTrain } from './commands/train.js';
import { createContext, type Context, type GlobalOptions } from './context.js';
import type { Register } from './register.js';

const VERSION = '0.1.0';

export interface Program {
  program: Command;
  /** Stops what a command started (servers, the store) once it ends. */
  close(): Promise<void>;
  /** A failure as the user should see it. */
  explain(err: unknown): Promise<unknown>;
  /** What scrubs everything the program prints. */
  redactor(): Promise<Redactor>;
}

export function buildProgram(): Program {
  const program = new Command('massgen-rl')
    .description('Make a team of LLM agents better every night: collect traces, train, evaluate, deploy.')
    .version(VERSION, '-V, --version')
    .addOption(new Option('-c, --config <file>', 'config file (default: ./massgen-rl.yaml, or $MASSGEN_RL_CONFIG)'))
    .option('--json', 'print results as JSON', false)
    .option('-v, --verbose', 'more output', false)
    .option('-y, --yes', 'accept defaults, never prompt', false)
    .option('--no-color', 'disable colours (NO_COLOR is honoured too)')
    .option(
      '--set <key=value>',
      'override a config value (repeatable), e.g. --set collect.concurrency=4',
      (v: string, prev: string[]) => [...prev, v],
      [] as string[],
    )
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();

  let context: Context | undefined;
  const ctx = () => (context ??= createContext(program.opts<GlobalOptions>()));
  for (const register of [
    registerInit,
    registerDoctor,
    registerCollect,
    registerFeedback,
    registerRewards,
    registerTasks,
    registerStatus,
    registerTraces,
    registerServe,
    registerGateway,
    registerTrain,
    registerCheckpoints,
    registerEval,
    registerReport,
    registerDeploy,
    registerReview,
    registerResources,
    registerLoop,
    registerStore,
  ] satisfies Register[]) {
    register(program, ctx);
  }
  return {
    program,
    close: async () => context?.close(),
    explain: async (err) => (context ? context.explain(err) : err),
    redactor: () => ctx().redactor(),
  };
}
