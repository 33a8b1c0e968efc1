import { Argument, type Command } from 'commander';
import { POLICY_KINDS } from '../../config/schema.js';
import type { Context } from '../context.js';
import type { Ui } from '../ui/output.js';

type PolicyResult = Awaited<ReturnType<typeof import('../../pipeline/train/policy.js').trainPolicy>>;

/** `train policy KIND`: a contextual bandit fitted on the decisions of one kind the traces logged (policies.*). */
export function registerTrainPolicy(train: Command, ctx: () => Context): Command {
  return train
    .command('policy')
    .description(
      'fit an orchestration policy (a contextual bandit, policies.*) on the decisions of its kind logged '
        + 'in the traces, valued off-policy, as a candidate set for eval',
    )
    .addArgument(new Argument('<kind>', 'the decision to learn').choices([...POLICY_KINDS]))
    .action(async (kind: string) => {
      const { ui, runtime } = ctx();
      const { trainPolicy } = await import('../../pipeline/train/policy.js');
      renderPolicy(ui, await trainPolicy(await runtime(), { policy: kind }));
    });
}

function renderPolicy(ui: Ui, r: PolicyResult): void {
  if (ui.opts.json) return ui.json(r);
  const ci = (e: { mean: number; low: number; high: number }) =>
    `${e.mean.toFixed(3)} [${e.low.toFixed(3)}, ${e.high.toFixed(3)}]`;
  ui.table(
    ['run', 'policy', 'algorithm', 'decisions', 'rollouts', 'arms taken', 'candidate set'],
    [
      [
        r.runId,
        `${r.policy.kind} v${r.policy.version}`,
        r.policy.algorithm,
        r.decisions,
        r.rollouts,
        Object.entries(r.armCounts)
          .map(([a, n]) => `${a} ${n}`)
          .join(', '),
        `v${r.candidateSet.version}`,
      ],
    ],
  );
  const rows = [
    ['logged (behaviour)', ci(r.ope.logged), '', ''],
    ['learned policy (greedy)', ci(r.ope.ips), ci(r.ope.snips), ci(r.ope.dr)],
  ];
  if (r.noPolicy) rows.push(['no policy', ci(r.noPolicy.ips), ci(r.noPolicy.snips), ci(r.noPolicy.dr)]);
  ui.table(['value (reward − token cost)', 'IPS', 'SNIPS', 'doubly robust'], rows);
  ui.print(
    `  effective sample size ${r.ope.effectiveSampleSize.toFixed(1)} of ${r.rollouts}; `
      + `evaluate it: massgen-rl eval --candidate policy:${r.policy.kind}@${r.policy.version}`,
  );
}
