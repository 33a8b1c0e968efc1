import type { CycleResult } from '../../pipeline/loop/loop.js';
import { withInterrupt } from '../interrupt.js';
import type { Register } from '../register.js';
import { formatTime } from '../ui/format.js';
import type { Ui } from '../ui/output.js';
import { printHistory } from './loop-history.js';
import { printProfile } from './loop-profile.js';

export const registerLoop: Register = (program, ctx) => {
  const loop = program
    .command('loop')
    .description(
      'run collect → review → train → eval → deploy on loop.schedule in the foreground (--once: one cycle now)',
    )
    .option('--once', 'run one cycle now (or resume the interrupted one) and exit')
    .action(async (flags: { once?: boolean }) => {
      const c = ctx();
      const { ui } = c;
      if (flags.once) {
        const { runCycle } = await import('../../pipeline/loop/loop.js');
        const rt = await c.runtime();
        const r = await withInterrupt(
          ui,
          'stopping: the running stage ends cleanly and the next cycle resumes it',
          (signal) => runCycle(rt, { signal, onStage: (stage, m) => ui.info(`[${stage}] ${m}`) }),
        );
        if (ui.opts.json) ui.json({ ok: r.status === 'completed', ...r });
        else renderCycle(ui, r);
        if (r.status === 'cancelled') {
          const { InterruptedError } = await import('../../errors.js');
          throw new InterruptedError(r.outcome);
        }
        if (r.status === 'failed') {
          const { GateError } = await import('../../errors.js');
          throw new GateError(r.outcome);
        }
        return;
      }
      const [{ runScheduled }, { Runtime }] = await Promise.all([
        import('../../pipeline/loop/schedule.js'),
        import('../../runtime/runtime.js'),
      ]);
      const [{ loadConfig }, { cycleSteps }] = await Promise.all([
        import('../../config/load.js'),
        import('../../scheduler/cycles.js'),
      ]);
      const first = await c.loadConfig();
      // A bad trainer key exits now, not at the first night's train stage.
      if (cycleSteps(first.config.loop.steps).steps.includes('train')) {
        const { checkRoleSettings } = await import('../../pipeline/train/roles.js');
        await checkRoleSettings(await c.runtime());
      }
      const fresh = async () => new Runtime(loadConfig({ configPath: c.opts.config, overrides: c.opts.set }));
      ui.info(
        `loop: ${first.config.loop.schedule} (${cycleSteps(first.config.loop.steps).steps.join(' → ')}); Ctrl-C stops`,
      );
      await withInterrupt(
        ui,
        'stopping the loop: a running cycle ends its stage cleanly and resumes at the next start',
        (signal) =>
          runScheduled(fresh, first.config.loop.schedule, {
            signal,
            onStage: (stage, m) => ui.info(`[${stage}] ${m}`),
            onCycle: (r) => (ui.opts.json ? ui.json(r) : renderCycle(ui, r)),
            onError: (m) => ui.warn(`cycle: ${m}`),
            onWaiting: (next) =>
              ui.info(next ? `next cycle at ${next.toISOString()}` : 'no further runs in the schedule'),
          }),
      );
    });

  loop
    .command('status')
    .description('the schedule, the next runs, a running cycle and the last cycles with each stage')
    .action(async () => {
      const { ui, runtime } = ctx();
      const { loopStatus } = await import('../../pipeline/loop/schedule.js');
      const s = loopStatus(await runtime());
      if (ui.opts.json) return ui.json(s);
      ui.print(`schedule: ${s.schedule} (${s.steps.join(' → ')}); next: ${s.next.join(', ')}`);
      ui.print(
        s.running
          ? `running now: process ${s.running.pid} on ${s.running.host} since ${formatTime(s.running.acquiredAt)}`
          : 'no cycle running',
      );
      if (!s.cycles.length) return ui.print('no cycles yet (`massgen-rl loop --once` runs one)');
      ui.table(
        ['cycle', 'status', 'started', 'collect', 'review', 'train', 'eval', 'deploy', 'outcome'],
        s.cycles.map((cy) => [
          cy.cycle,
          cy.status,
          formatTime(cy.startedAt),
          ...(['collect', 'review', 'train', 'eval', 'deploy'] as const).map((st) => cy.stages[st]?.status ?? '—'),
          cy.outcome ?? cy.error ?? '',
        ]),
      );
      printHistory(ui, s.history);
      const last = s.cycles[0]!;
      printProfile(ui, last.cycle, last.stages);
    });
};

const num = (x: number | null | undefined) => (typeof x === 'number' ? x.toFixed(3) : '—');

type CollectRecord = NonNullable<CycleResult['stages']['collect']>;

/** What a collect took: tasks completed, or (collect.source gateway) the captured sessions and those held back. */
function collected(c: CollectRecord): string {
  const g = c.captured;
  if (!g) return `${c.completed ?? '—'}/${c.tasks ?? '—'} completed`;
  const unagreed = g.no_majority ? `, ${g.no_majority} without a majority` : '';
  return `took ${g.taken ?? 0} captured session(s), ${g.held_out ?? 0} held out, ${g.waiting ?? 0} waiting for a reward${unagreed}`;
}

function renderCycle(ui: Ui, r: CycleResult): void {
  const s = r.stages;
  const rows: (string | number)[][] = [];
  if (s.collect)
    rows.push([
      'collect',
      s.collect.status,
      s.collect.run_id
        ? `${s.collect.run_id}: ${collected(s.collect)}, mean reward ${num(s.collect.mean_reward)}`
        : (s.collect.reason ?? ''),
    ]);
  if (s.review)
    rows.push([
      'review',
      s.review.status,
      s.review.status === 'done'
        ? `canary ${s.review.canary ?? 'none'}, watch ${s.review.watch ?? 'none'}`
        : (s.review.reason ?? ''),
    ]);
  if (s.train)
    rows.push([
      'train',
      s.train.status,
      s.train.checkpoint_id
        ? `${s.train.checkpoint_id} (${s.train.weights ?? ''}), final loss ${num(s.train.final_loss)}`
        : (s.train.reason ?? ''),
    ]);
  if (s.eval) {
    const diff = s.eval.diff;
    rows.push([
      'eval',
      s.eval.status,
      s.eval.eval_run_id
        ? `${s.eval.metric ?? ''}: baseline ${num(s.eval.baseline)}, candidate ${num(s.eval.candidate)}, difference ${num(diff?.mean)} [${num(diff?.low)}, ${num(diff?.high)}]`
        : (s.eval.reason ?? ''),
    ]);
  }
  if (s.deploy)
    rows.push(['deploy', s.deploy.status, `${s.deploy.action ?? ''}${s.deploy.reason ? ` (${s.deploy.reason})` : ''}`]);
  ui.table([`cycle ${r.cycle}${r.resumed ? ' (resumed)' : ''}`, 'status', 'result'], rows);
  for (const e of r.earlier) ui.print(`  an earlier attempt (${new Date(e.at).toISOString()}): ${e.outcome}`);
  if (s.review?.detail) ui.print(`  review: ${s.review.detail}`);
  for (const g of s.deploy?.gates ?? [])
    ui.print(`  ${g.passed ? ui.c.green('✓') : ui.c.red('✗')} ${g.gate}: ${g.detail}`);
  ui.print(`${r.status === 'completed' ? ui.c.bold(r.outcome) : ui.c.yellow(r.outcome)}`);
  if (s.eval?.report) ui.print(`report: ${s.eval.report}`);
  printProfile(ui, r.cycle, s);
}
