import { Option } from 'commander';
import { MAX_CONCURRENCY, MAX_TASKS } from '../../config/schema.js';
import { GateError, InterruptedError, UserError } from '../../errors.js';
import type { CapturedCounts } from '../../pipeline/collect/captured.js';
import { wholeNumber } from '../flags.js';
import { withInterrupt } from '../interrupt.js';
import type { Register } from '../register.js';
import { formatDuration } from '../ui/format.js';
import type { Ui } from '../ui/output.js';

interface CollectFlags {
  tasks?: string;
  n?: string;
  concurrency?: string;
  split?: 'train' | 'eval' | 'all';
  enqueue?: boolean;
  worker?: boolean;
  wait?: boolean;
  source?: 'orchestrate' | 'gateway';
}

export const registerCollect: Register = (program, ctx) => {
  program
    .command('collect')
    .description('run tasks through the agent team and record scored traces')
    .option(
      '--tasks <file|suite>',
      'a task file (JSONL/YAML) or a built-in suite (SUITE, or SUITE@DIFFICULTY: 0–3), instead of tasks.sources',
    )
    .option('--n <n>', 'number of tasks')
    .option('--concurrency <c>', 'orchestrations at a time (default collect.concurrency)')
    .addOption(new Option('--split <split>', 'which split of the tasks').choices(['train', 'eval', 'all']))
    .addOption(
      new Option(
        '--enqueue',
        'create the run and put its tasks on the shared queue (PostgreSQL store) for workers',
      ).conflicts(['worker', 'concurrency']),
    )
    .addOption(
      new Option(
        '--source <source>',
        'orchestrate: run tasks through the team; gateway: take the captured gateway sessions (default collect.source)',
      ).choices(['orchestrate', 'gateway']),
    )
    .option('--worker', 'take tasks from the shared queue and record their rollouts, until none is left')
    .addOption(
      new Option(
        '--wait',
        'with --worker: keep waiting for new tasks instead of stopping when the queue is empty',
      ).implies({ worker: true }),
    )
    .action(async (flags: CollectFlags) => {
      const { ui, runtime } = ctx();
      if (flags.source === 'gateway' && (flags.enqueue || flags.worker || flags.tasks))
        throw new UserError(
          '--source gateway takes captured sessions: it runs no tasks (no --tasks, --enqueue or --worker)',
        );
      if (flags.enqueue || flags.worker) {
        const { runQueued } = await import('./collect-queued.js');
        return runQueued(ui, await runtime(), flags);
      }
      const { collect } = await import('../../pipeline/collect/collect.js');
      const rt = await runtime();
      const bar = ui.progress('preparing the team');
      const stopping =
        'stopping: running orchestrations are cancelled and recorded as such (Ctrl-C again does nothing; wait a moment)';
      try {
        const summary = await withInterrupt(ui, stopping, (signal) =>
          collect(rt, {
            tasks: flags.tasks,
            n: wholeNumber('--n', flags.n, MAX_TASKS),
            concurrency: wholeNumber('--concurrency', flags.concurrency, MAX_CONCURRENCY),
            split: flags.split,
            ...(flags.source ? { source: flags.source } : {}),
            signal,
            onStage: (m) => bar.update(m),
            onProgress: (p) =>
              bar.update(
                `${p.done}/${p.total} done, ${p.failed} failed${p.etaMs !== null ? `, ETA ${formatDuration(p.etaMs)}` : ''}  last: ${p.last?.taskId ?? ''} ${p.last?.status ?? ''} reward ${p.last?.reward?.toFixed(2) ?? '—'}`,
              ),
          }),
        );
        bar.stop();
        if (summary.captured) {
          const { nothingTaken } = await import('../../pipeline/collect/captured.js');
          return printCaptured(ui, summary.runId, summary.captured, nothingTaken);
        }
        const nothingCompleted = summary.status === 'completed' && summary.completed === 0;
        if (ui.opts.json) ui.json({ ok: !nothingCompleted, ...summary });
        else {
          const pct = (x: number | null) => (x === null ? '—' : `${(x * 100).toFixed(0)}%`);
          ui.table(
            ['run', 'tasks', 'success', 'correct', 'mean reward', 'consensus', 'mean rounds', 'tokens', 'wall time'],
            [
              [
                summary.runId,
                summary.tasks,
                `${summary.completed}/${summary.tasks} (${pct(summary.successRate)})`,
                pct(summary.correctRate),
                summary.meanReward?.toFixed(3) ?? '—',
                pct(summary.consensusRate),
                summary.meanRounds?.toFixed(1) ?? '—',
                summary.tokens,
                formatDuration(summary.wallMs),
              ],
            ],
          );
          for (const f of summary.failureReasons.slice(0, 5)) ui.print(`  failed ×${f.count}: ${f.error}`);
          if (summary.shortfall) ui.print(`  note: ${summary.shortfall.hint}`);
          const cur = summary.curriculum;
          if (cur) {
            ui.print(`  curriculum: ${cur.recorded} scored result(s) of production at the suites' levels`);
            for (const a of cur.advanced)
              ui.print(`  curriculum: ${a.suite} moves up to level ${a.level}: ${a.reason}`);
          }
          const c = summary.canary;
          if (c)
            ui.print(
              `  canary set v${c.version} served ${c.rollouts} rollout(s); \`massgen-rl review\` promotes it once it passes its gates`,
            );
        }
        if (nothingCompleted) {
          const reasons = summary.failureReasons
            .slice(0, 3)
            .map((f) => `${f.count} × ${f.error}`)
            .join('; ');
          throw new GateError(
            `no rollout completed: ${summary.failed} of ${summary.tasks} failed${reasons ? ` (${reasons})` : ''}`,
            'check the models (massgen-rl doctor) and the reasons above; traces of the failed rollouts: massgen-rl traces list --status failed',
          );
        }
        if (summary.status === 'cancelled')
          throw new InterruptedError(
            `collect interrupted: ${summary.completed} completed, ${summary.cancelled} cancelled`,
          );
      } catch (err) {
        bar.stop();
        throw err;
      }
    });
};

/** A gateway collect's counts; nothing taken is no error (the loop goes on with nothing to train). */
function printCaptured(ui: Ui, runId: string, c: CapturedCounts, why: (c: CapturedCounts) => string): void {
  if (ui.opts.json) return ui.json({ ok: true, runId, source: 'gateway', ...c });
  ui.table(
    ['run', 'taken', 'scored', 'already rewarded', 'held out', 'joined into MassGen', 'waiting for a reward'],
    [[runId, c.taken, c.scored, c.rewarded, c.heldOut, c.joined, c.waiting]],
  );
  if (!c.taken) ui.print(`  ${why(c)}`);
}
