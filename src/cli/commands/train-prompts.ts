import type { Command } from 'commander';
import { InterruptedError } from '../../errors.js';
import type { Context } from '../context.js';
import { withInterrupt } from '../interrupt.js';
import { promptOptStepLine, renderPromptOpt } from './train-prompts-render.js';

const RESUME = 'massgen-rl train prompts --resume';

/** `train prompts`: prompt optimization (prompt_opt.*), its budgets in prompt_opt.budget.*. */
export function registerTrainPrompts(train: Command, ctx: () => Context): Command {
  return train
    .command('prompts')
    .description(
      "optimize the team's prompts together (prompt_opt.*): reflective edits and merges kept on a Pareto "
        + 'front over real orchestrations, within prompt_opt.budget',
    )
    .option('--resume [run]', 'continue a stopped prompt-optimization run (default: the newest one)')
    .action(async (flags: { resume?: boolean | string }) => {
      const { ui, runtime } = ctx();
      const { trainPrompts } = await import('../../pipeline/prompt-opt/train-prompts.js');
      const rt = await runtime();
      const stopping = `stopping: the step in progress is dropped; resume with \`${RESUME}\``;
      const r = await withInterrupt(ui, stopping, (signal) =>
        trainPrompts(rt, {
          resume: flags.resume,
          signal,
          onStage: (m) => ui.info(m),
          onStep: (p, f, spent) => ui.info(promptOptStepLine(p, f, spent, rt.config.prompt_opt)),
        }),
      );
      renderPromptOpt(ui, r);
      if (r.status === 'cancelled') {
        throw new InterruptedError(
          `prompt optimization interrupted after ${r.proposals.length} proposal(s); resume with \`${RESUME}\``,
        );
      }
    });
}
