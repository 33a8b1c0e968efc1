import type { Review } from '../../pipeline/review/review.js';
import type { Register } from '../register.js';
import type { Ui } from '../ui/output.js';

export const registerReview: Register = (program, ctx) => {
  program
    .command('review')
    .description(
      'judge the last change of production on the rollouts since: promote a canary that passes its gates, '
        + 'roll back a deploy that regressed (with an audit record)',
    )
    .action(async () => {
      const { ui, runtime } = ctx();
      const { reviewProduction } = await import('../../pipeline/review/review.js');
      const rt = await runtime();
      const r = await reviewProduction(rt, 'cli');
      if (ui.opts.json) return ui.json({ ok: true, ...r });
      render(ui, r, rt.config.deploy.rollback_on_regression);
    });
};

function render(ui: Ui, r: Review, watching: boolean): void {
  const c = r.canary;
  if (!c) ui.print('canary: none running');
  else {
    const mark =
      c.verdict === 'promoted' || c.verdict === 'advanced'
        ? ui.c.green('✓')
        : c.verdict === 'stopped' || c.verdict === 'rolled back'
          ? ui.c.red('✗')
          : '-';
    const stage = c.stage ? ` (stage ${c.stage.stage} of ${c.stage.of}, ${Math.round(c.fraction * 1000) / 10} %)` : '';
    ui.print(`${mark} canary set v${c.set.version}${stage}: ${c.verdict}, ${c.rollouts} of ${c.needed} rollouts`);
    ui.print(`  ${c.detail}`);
  }
  const w = r.watch;
  if (!w) {
    const why = watching
      ? 'nothing to watch (the last change of production was not a deploy)'
      : 'off (deploy.rollback_on_regression is false)';
    return ui.print(`watch: ${why}`);
  }
  const mark = w.verdict === 'rolled back' ? ui.c.yellow('!') : w.verdict === 'held' ? ui.c.green('✓') : '-';
  const what = `production set v${w.deployedSet.version} since its deploy`;
  ui.print(`${mark} ${what}: ${w.verdict}, ${w.rollouts} of ${w.needed} rollouts`);
  ui.print(`  ${w.detail}`);
}
