import { MAX_CONCURRENCY, MAX_TASKS } from '../../config/schema.js';
import { InterruptedError } from '../../errors.js';
import type { Runtime } from '../../runtime/runtime.js';
import { wholeNumber } from '../flags.js';
import { withInterrupt } from '../interrupt.js';
import type { Ui } from '../ui/output.js';

interface QueuedFlags {
  tasks?: string;
  n?: string;
  concurrency?: string;
  split?: 'train' | 'eval' | 'all';
  enqueue?: boolean;
  wait?: boolean;
}

/** `collect --enqueue` (one run's tasks onto the shared queue) and `collect --worker` (take and run them). */
export async function runQueued(ui: Ui, rt: Runtime, flags: QueuedFlags): Promise<void> {
  if (flags.enqueue) {
    const { enqueueCollect } = await import('../../pipeline/collect/enqueue.js');
    const s = await enqueueCollect(rt, {
      tasks: flags.tasks,
      n: wholeNumber('--n', flags.n, MAX_TASKS),
      split: flags.split,
    });
    if (ui.opts.json) ui.json({ ok: true, ...s });
    else
      ui.print(
        `run ${s.runId}: ${s.tasks} task(s) queued for workers (resource set v${s.resourceSet.version}); start workers with \`massgen-rl collect --worker\``,
      );
    return;
  }
  const { collectWorker } = await import('../../pipeline/collect/worker.js');
  const stopping = 'stopping: running orchestrations are cancelled and handed back to the queue for another worker';
  const s = await withInterrupt(ui, stopping, (signal) =>
    collectWorker(rt, {
      concurrency: wholeNumber('--concurrency', flags.concurrency, MAX_CONCURRENCY),
      wait: flags.wait,
      signal,
      onJob: (j) =>
        ui.print(
          `${j.taskId}: ${j.status}${j.reward === null ? '' : `, reward ${j.reward.toFixed(2)}`} (run ${j.runId})`,
        ),
    }).then((summary) => ({ summary, interrupted: signal.aborted })),
  );
  const { summary } = s;
  if (ui.opts.json) ui.json({ ok: true, ...summary });
  else {
    ui.table(
      ['jobs', 'completed', 'failed', 'already recorded', 'handed back from dead workers', 'runs finished'],
      [
        [
          summary.jobs,
          summary.completed,
          summary.failed,
          summary.alreadyRecorded,
          summary.reaped,
          summary.runsFinished.join(', ') || '—',
        ],
      ],
    );
  }
  if (s.interrupted) throw new InterruptedError('collect worker interrupted: its running tasks went back to the queue');
}
