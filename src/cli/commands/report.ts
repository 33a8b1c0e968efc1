import type { Register } from '../register.js';

export const registerReport: Register = (program, ctx) => {
  program
    .command('report')
    .description(
      'rebuild the HTML report from the store: reward per cycle, per-category results, cost, training curves, production history',
    )
    .option('--eval <id>', 'the evaluation to show (default: the newest one with results)')
    .option('-o, --out <file>', 'where to write it (default: <data_dir>/reports/eval-<id>.html)')
    .action(async (flags: { eval?: string; out?: string }) => {
      const { ui, runtime } = ctx();
      const { writeReport } = await import('../../pipeline/evaluate/report.js');
      const result = await writeReport(await runtime(), { evalRunId: flags.eval, out: flags.out });
      if (ui.opts.json) return ui.json(result);
      ui.print(result.file);
      if (!result.evalRunId)
        ui.info('no evaluation has results yet: the report shows collects, training and production only');
    });
};
