import { Option, type Command } from 'commander';
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
  const train = program
    .command('train')
    .description(
      'train what the team runs on: its weights (`train weights`, the default), an orchestration policy '
        + '(`train policy`) or its prompts (`train prompts`)',
    )
    .usage('[weights|policy|prompts] [options]')
    .addOption(new Option('--algo <algo>').hideHelp())
    .enablePositionalOptions()
    .allowUnknownOption()
    .allowExcessArguments()
    .hook('preSubcommand', (self, sub) => {
      const { algo } = self.opts<{ algo?: string }>();
      if (algo !== undefined) {
        throw new UserError(`--algo goes after the kind of training: massgen-rl train ${sub.name()} --algo ${algo}`);
      }
    });
  const kinds = {
    weights: registerTrainWeights(train, ctx),
    policy: registerTrainPolicy(train, ctx),
    prompts: registerTrainPrompts(train, ctx),
  };
  train.action(async (flags: { algo?: string }, self: Command) => {
    const kind = flags.algo !== undefined && Object.hasOwn(OLD_KINDS, flags.algo) ? OLD_KINDS[flags.algo]! : 'weights';
    if (kind === 'weights') {
      const algo = flags.algo === undefined ? [] : ['--algo', flags.algo];
      await kinds.weights.parseAsync([...algo, ...self.args], { from: 'user' });
      return;
    }
    const args = kind === 'policy' ? policyAsArgument(self.args) : self.args;
    const now =
      kind === 'policy' ? `train policy ${args.find((a) => !a.startsWith('-')) ?? '<kind>'}` : `train ${kind}`;
    ctx().ui.warn(`train --algo ${flags.algo} is deprecated: use massgen-rl ${now}`);
    await kinds[kind].parseAsync(args, { from: 'user' });
  });
};

/** `--policy KIND` (or `--policy=KIND`) of the old spelling as `train policy`'s argument. */
function policyAsArgument(args: readonly string[]): string[] {
  return args.flatMap((a) => (a === '--policy' ? [] : a.startsWith('--policy=') ? [a.slice('--policy='.length)] : [a]));
}
