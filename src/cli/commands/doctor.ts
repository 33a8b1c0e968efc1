import { GateError } from '../../errors.js';
import type { Register } from '../register.js';

export const registerDoctor: Register = (program, ctx) => {
  program
    .command('doctor')
    .description(
      'check Node, Python, the trainer virtualenv, the CPU, GPUs, the default model, the store and disk space',
    )
    .option('--fix', 'create or repair the trainer virtualenv and provision the default model', false)
    .action(async (flags: { fix: boolean }) => {
      const { ui, runtime } = ctx();
      const { runDoctor } = await import('../../pipeline/utilities/doctor.js');
      const rt = await runtime();
      const progress = flags.fix ? ui.progress('checking and repairing the environment') : undefined;
      let report;
      try {
        report = await runDoctor(rt, {
          fix: flags.fix,
          onProgress: (stage, message) => {
            progress?.update(`${stage}: ${message}`);
            ui.debug(`[${stage}] ${message}`);
          },
        });
      } catch (err) {
        progress?.fail('doctor --fix stopped');
        throw err;
      }
      progress?.stop();
      if (ui.opts.json) ui.json(report);
      else {
        for (const check of report.checks) {
          const mark = { ok: ui.c.green('✓'), fail: ui.c.red('✗'), warn: ui.c.yellow('!'), info: ui.c.cyan('i') }[
            check.status
          ];
          ui.print(`${mark} ${ui.c.bold(check.title)}: ${check.detail}`);
          if (check.fix) ui.print(`    fix: ${check.fix}`);
        }
      }
      if (!report.ok)
        throw new GateError(
          `${report.checks.filter((c) => c.status === 'fail').length} check(s) failed`,
          flags.fix ? undefined : 'run `massgen-rl doctor --fix`',
        );
    });
};
