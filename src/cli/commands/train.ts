import type { Command } from 'commander';
import { UserError } from '../../errors.js';
import type { Register } from '../register.js';
import { registerTrainPolicy } from './train-policy.js';
import { registerTrainPrompts } from './train-prompts.js';
import { registerTrainWeights } from './train-weights.js';

/** The kinds of training `train --algo` used to choose besides the trainers, and their commands now. */
const OLD_KINDS: Record<string, 'policy' | 'prompts'> = { bandit: 'policy', apo: 'prompts' };

/**
 * `train weights|policy|prompts`, each with its own options; `train` without a kind trains the weights.
 * The old `train --algo bandit --policy KIND` and `train --algo apo` still run, with a deprecation line.
 */
export const registerTrain: Register = (program, ctx) => {
  // No --algo of its own: an option train does not know stops its subcommand lookup, so `train --algo X …`
  // (the old spelling) reaches the action below with everything, and `train weights --algo X` goes to weights.
  const train = program
    .command('train')
    .description(
      'train what the team runs on: its weights (`train weights`, the default), an orchestration policy '
        + '(`train policy`) or its prompts (`train prompts`)',
    )
    .usage('[weights|policy|prompts] [options]')
    .allowUnknownOption()
    .allowExcessArguments();
  const kinds = {
    weights: registerTrainWeights(train, ctx),
    policy: registerTrainPolicy(train, ctx),
    prompts: registerTrainPrompts(train, ctx),
  };
  train.action(async (_flags: unknown, self: Command) => {
    const { algo, rest } = takeAlgo(self.args);
    const named = rest.find((a) => Object.hasOwn(kinds, a));
    if (algo !== undefined && named !== undefined) {
      throw new UserError(`--algo goes after the kind of training: massgen-rl train ${named} --algo ${algo}`);
    }
    const kind = algo !== undefined && Object.hasOwn(OLD_KINDS, algo) ? OLD_KINDS[algo]! : 'weights';
    if (kind === 'weights') {
      await kinds.weights.parseAsync([...(algo === undefined ? [] : ['--algo', algo]), ...rest], { from: 'user' });
      return;
    }
    const args = kind === 'policy' ? policyAsArgument(rest) : rest;
    const now =
      kind === 'policy' ? `train policy ${args.find((a) => !a.startsWith('-')) ?? '<kind>'}` : `train ${kind}`;
    ctx().ui.warn(`train --algo ${algo} is deprecated: use massgen-rl ${now}`);
    await kinds[kind].parseAsync(args, { from: 'user' });
  });
};

/** `--algo X` or `--algo=X` out of the arguments `train` got without a kind. */
function takeAlgo(args: readonly string[]): { algo?: string; rest: string[] } {
  const rest: string[] = [];
  let algo: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--algo' && i + 1 < args.length) algo = args[++i];
    else if (a.startsWith('--algo=')) algo = a.slice('--algo='.length);
    else rest.push(a);
  }
  return { algo, rest };
}

/** `--policy KIND` (or `--policy=KIND`) of the old spelling as `train policy`'s argument. */
function policyAsArgument(args: readonly string[]): string[] {
  return args.flatMap((a) => (a === '--policy' ? [] : a.startsWith('--policy=') ? [a.slice('--policy='.length)] : [a]));
}
