import { Option } from 'commander';
import type { Register } from '../register.js';

export const registerRewards: Register = (program, ctx) => {
  const rewards = program.command('rewards').description('reward tools');
  rewards
    .command('recompute')
    .description(
      're-score stored rollouts with the current reward config, without re-running agents (human feedback is kept)',
    )
    .option('--run <id>', 'only this collect run')
    .option('--task <id>', 'only this task')
    .addOption(new Option('--status <status>', 'only this status').choices(['completed', 'failed']))
    .action(async (flags: { run?: string; task?: string; status?: 'completed' | 'failed' }) => {
      const { ui, runtime } = ctx();
      const { recomputeRewards } = await import('../../pipeline/utilities/rewards.js');
      const bar = ui.progress('re-scoring rollouts');
      const summary = await recomputeRewards(await runtime(), {
        runId: flags.run,
        taskId: flags.task,
        status: flags.status,
      });
      bar.stop();
      if (ui.opts.json) return ui.json(summary);
      const f = (x: number | null) => (x === null ? '—' : x.toFixed(3));
      ui.print(
        `${ui.c.green('✓')} re-scored ${summary.rollouts} rollout(s), ${summary.changed} changed; mean total reward ${f(summary.meanBefore)} → ${f(summary.meanAfter)}`,
      );
    });
};
