import { decimalNumber } from '../flags.js';
import type { Register } from '../register.js';

export const registerFeedback: Register = (program, ctx) => {
  program
    .command('feedback <rollout>')
    .description('add a human reward to a rollout, or to one of its agents')
    .requiredOption('--score <x>', 'the reward value')
    .option('--agent <id>', 'credit one agent instead of the whole rollout')
    .option('--note <text>', 'why')
    .action(async (rollout: string, flags: { score: string; agent?: string; note?: string }) => {
      const { ui, runtime } = ctx();
      const score = decimalNumber('--score', flags.score);
      const { addFeedback } = await import('../../pipeline/utilities/rewards.js');
      const result = await addFeedback(await runtime(), rollout, { score, agent: flags.agent, note: flags.note });
      if (ui.opts.json) return ui.json(result);
      ui.print(
        `${ui.c.green('✓')} human reward ${score} on ${result.rolloutId}${flags.agent ? ` (${flags.agent})` : ''}; total reward now ${result.total.toFixed(3)}`,
      );
    });
};
