import type { Register } from '../register.js';
import { formatBytes, formatTime } from '../ui/format.js';

export const registerStatus: Register = (program, ctx) => {
  program
    .command('status')
    .description('store size and counts, latest runs, production resources')
    .action(async () => {
      const { ui, runtime } = ctx();
      const { getStatus } = await import('../../pipeline/status.js');
      const report = await getStatus(await runtime());
      if (ui.opts.json) return ui.json(report);
      ui.print(`${ui.c.bold(report.project)} — config ${report.config}`);
      if (!report.store) return ui.print('store: not created yet (run `massgen-rl doctor --fix` or `massgen-rl collect`)');
      const s = report.store;
      ui.print(`store: ${s.path} (${formatBytes(s.bytes)}, schema v${s.schemaVersion})`);
      ui.table(['table', 'rows'], Object.entries(s.counts).map(([k, v]) => [k, v]));
      const statuses = Object.entries(s.rolloutsByStatus).map(([k, v]) => `${k} ${v}`).join(', ');
      if (statuses) ui.print(`rollouts: ${statuses}`);
      const runs = [...report.latest.collect.map((r) => ['collect', r] as const), ...report.latest.training.map((r) => ['train', r] as const), ...report.latest.loop.map((r) => ['loop', r] as const)];
      if (runs.length) ui.table(['run', 'kind', 'status', 'started'], runs.map(([k, r]) => [r.id, k, r.status, formatTime(r.startedAt)]));
      if (report.production.length) {
        ui.table(['production', 'kind', 'version', 'since'], report.production.map((r) => [r.name, r.kind, `v${r.version}`, formatTime(r.createdAt)]));
      } else {
        ui.print('production: nothing deployed yet');
      }
    });
};
