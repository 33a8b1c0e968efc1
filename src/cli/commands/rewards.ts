import { Option } from 'commander';
import { decimalNumber } from '../flags.js';
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
  rewards
    .command('audit')
    .description(
      'how well each reward family tells right answers from wrong ones, on the answers a reference verified '
        + '(coverage, AUC, precision and recall): which signal to trust before turning references off',
    )
    .option('--threshold <x>', 'a value at or above it reads as "right", for precision and recall', '0.5')
    .option(
      '--ensemble <a+b>',
      'families scored together (the mean of those that scored an answer), e.g. judge+peer_vote; repeatable '
        + '(default: every family that reads no reference, together)',
      (v: string, all: string[]) => [...all, v],
      [] as string[],
    )
    .action(async (flags: { threshold: string; ensemble: string[] }) => {
      const { ui, runtime } = ctx();
      const { auditRewards } = await import('../../pipeline/utilities/rewards.js');
      const threshold = decimalNumber('--threshold', flags.threshold);
      const audit = auditRewards(await runtime(), { threshold, ensembles: flags.ensemble });
      if (ui.opts.json) return ui.json(audit);
      const { turn, rollout } = audit.labelled;
      ui.print(`verified answers: ${turn} (every answer, turn channel), ${rollout} (final answers, rollout channel)`);
      if (!audit.families.length)
        return ui.print('no other reward family scored a verified answer (rewards.weights names the families)');
      const { auditTable } = await import('../../evaluation/reward-audit.js');
      const table = auditTable(audit.families);
      ui.table(table.head, table.rows);
      ui.print(`precision and recall of "value ≥ ${audit.families[0]!.threshold}", with 95 % Wilson intervals`);
    });
};
