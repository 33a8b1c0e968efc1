import { Option } from 'commander';
import { MAX_CONCURRENCY, MAX_TASKS } from '../../config/schema.js';
import type { PairedProgress } from '../../rollouts/paired.js';
import { wholeNumber } from '../flags.js';
import { withInterrupt } from '../interrupt.js';
import type { Register } from '../register.js';
import { formatDuration } from '../ui/format.js';
import { renderRoleCredit, roleJson } from '../ui/role-credit.js';

interface EvalFlags {
  candidate?: string;
  baseline?: string;
  source?: 'tasks' | 'gateway';
  tasks?: string;
  split?: 'train' | 'eval' | 'all';
  n?: string;
  seeds?: string;
  concurrency?: string;
  report: boolean;
}

export const registerEval: Register = (program, ctx) => {
  program
    .command('eval')
    .description(
      'evaluate a candidate against production: same tasks and sampling seeds, paired statistics, deploy gates, HTML report',
    )
    .option(
      '--candidate <spec>',
      'set:N, a checkpoint id, resource:NAME@VERSION or PROMPT@VERSION (default: the newest trained candidate)',
    )
    .option('--baseline <spec>', 'what to compare against (default: production)')
    .addOption(
      new Option(
        '--source <source>',
        'tasks: orchestrations of tasks; gateway: replay the held-out captured gateway calls (default eval.source)',
      ).choices(['tasks', 'gateway']),
    )
    .option(
      '--tasks <file|suite>',
      'a task file (JSONL/YAML) or a built-in suite (SUITE, or SUITE@DIFFICULTY: 0–3), instead of eval.tasks / tasks.sources',
    )
    .addOption(
      new Option('--split <split>', 'which split of the tasks (default eval.split)').choices(['train', 'eval', 'all']),
    )
    .option('--n <n>', 'number of tasks (with --source gateway: captured calls, default eval.replay.max_prompts)')
    .option('--seeds <k>', 'sampling seeds per task (default eval.seeds)')
    .option('--concurrency <c>', 'orchestrations at a time')
    .option('--no-report', 'skip the HTML report')
    .action(async (flags: EvalFlags) => {
      const { ui, runtime } = ctx();
      const [{ evaluate }, { renderEvaluation }] = await Promise.all([
        import('../../pipeline/evaluate/evaluate.js'),
        import('../ui/evaluation.js'),
      ]);
      const opts = {
        candidate: flags.candidate,
        baseline: flags.baseline,
        source: flags.source,
        tasks: flags.tasks,
        split: flags.split,
        n: wholeNumber('--n', flags.n, MAX_TASKS),
        seeds: wholeNumber('--seeds', flags.seeds, 100),
        concurrency: wholeNumber('--concurrency', flags.concurrency, MAX_CONCURRENCY),
      };
      const rt = await runtime();
      const bar = ui.progress('preparing the baseline and candidate teams');
      const stopping = 'stopping: running orchestrations are cancelled; what finished is kept and reused next time';
      // With roles, each changed role's own effect is measured too (orchestrations only: a replay has no roles).
      const { teamRoles } = await import('../../pipeline/roles.js');
      const { implicit, scopes } = teamRoles(rt.config);
      const perRole = !implicit && (opts.source ?? rt.config.eval.source) === 'tasks';
      try {
        const { summary, credit } = await withInterrupt(ui, stopping, async (signal) => {
          const run = {
            ...opts,
            signal,
            onStage: (m: string) => bar.update(m),
            onProgress: (p: PairedProgress) =>
              bar.update(
                `${p.done}/${p.total} (${p.reused} reused)  last: ${p.last?.side} ${p.last?.taskId} reward ${p.last?.reward?.toFixed(2) ?? '—'}`,
              ),
          };
          if (!perRole) return { summary: await evaluate(rt, run), credit: null };
          const { evaluateRoleCredit } = await import('../../pipeline/evaluate/roles.js');
          const credit = await evaluateRoleCredit(rt, { ...run, roles: scopes });
          return { summary: credit.team, credit };
        });
        bar.stop();
        let reportFile: string | null = null;
        if (flags.report && rt.config.eval.report) {
          const { writeReport } = await import('../../pipeline/evaluate/report.js');
          reportFile = (await writeReport(rt, { evalRunId: summary.evalRunId })).file;
        }
        if (ui.opts.json) return ui.json({ ...summary, report: reportFile, ...(credit ? roleJson(credit) : {}) });
        renderEvaluation(ui, summary);
        if (credit) renderRoleCredit(ui, credit, rt.config.deploy.role_gates);
        if (reportFile) ui.print(`report: ${reportFile}`);
        ui.info(`took ${formatDuration(summary.wallMs)}`);
      } catch (err) {
        bar.stop();
        throw err;
      }
    });
};
