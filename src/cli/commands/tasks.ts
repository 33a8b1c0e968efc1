import type { Register } from '../register.js';

export const registerTasks: Register = (program, ctx) => {
  program
    .command('tasks')
    .description(
      'the built-in task suites: their difficulty levels (tasks.sources[].difficulty; the default marked) and the templates held out for eval (tasks.split.holdout_templates)',
    )
    .action(async () => {
      const { ui, loadConfig } = ctx();
      const { describeSuites } = await import('../../pipeline/utilities/tasks.js');
      const suites = describeSuites((await loadConfig()).config);
      if (ui.opts.json) return ui.json(suites);
      for (const suite of suites) {
        ui.print(`${ui.c.bold(suite.name)} — ${suite.describe}`);
        ui.table(
          ['difficulty', 'tasks', 'held out for eval (kind: templates)'],
          suite.levels.map((l) => [
            `${l.level}${l.default ? ' (default)' : ''}`,
            l.describe,
            Object.entries(l.heldOut)
              .map(([kind, names]) => `${kind}: ${names.join(', ')}`)
              .join('; ') || '—',
          ]),
        );
      }
    });
};
