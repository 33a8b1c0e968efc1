import type { Command } from 'commander';
import type { Context } from '../context.js';

interface ImportFlags {
  massgenLogs: string;
  skipInvalid?: boolean;
}

/** Adds `traces import` to the `traces` command: MassGen log directories become rollouts. */
export function registerTracesImport(traces: Command, ctx: () => Context): void {
  traces
    .command('import')
    .description(
      'import MassGen logs (.massgen/massgen_logs/log_*/turn_N[/attempt_M]) as rollouts; re-importing skips what is stored',
    )
    .requiredOption(
      '--massgen-logs <dir>',
      'a massgen_logs directory, one log_<timestamp> directory, or a project holding .massgen/',
    )
    .option('--skip-invalid', 'import the valid turns and list the malformed ones, instead of importing nothing', false)
    .action(async (flags: ImportFlags) => {
      const { ui, runtime } = ctx();
      const { importMassgenLogs } = await import('../../pipeline/utilities/import-massgen.js');
      const summary = importMassgenLogs(await runtime(), { dir: flags.massgenLogs, skipInvalid: flags.skipInvalid });
      if (ui.opts.json) return ui.json({ ok: true, ...summary });
      const where = (u: { log: string; turn: number; attempt: number | null }) =>
        `${u.log} turn ${u.turn}${u.attempt === null ? '' : ` attempt ${u.attempt}`}`;
      const rows: (string | number)[][] = [
        ...summary.imported.map((u) => [
          where(u),
          'imported',
          u.rollout_id,
          `${u.status}, winner ${u.winner ?? '—'}, ${u.answers} answers, ${u.votes} votes, ${u.rounds} rounds`
            + (u.gateway_calls === undefined ? '' : `, ${u.gateway_calls} captured calls joined`),
        ]),
        ...summary.skipped.map((u) => [where(u), `skipped (${u.reason})`, u.rollout_id ?? '—', u.detail]),
        ...summary.failed.map((u) => [where(u), ui.c.red('failed'), '—', u.message]),
      ];
      if (rows.length) ui.table(['MassGen log', 'result', 'rollout', 'detail'], rows);
      const already = summary.skipped.filter((s) => s.reason === 'already imported').length;
      const incomplete = summary.skipped.length - already;
      ui.print(
        `${summary.failed.length ? ui.c.yellow('!') : ui.c.green('✓')} ${summary.imported.length} imported, ${already} already present`
          + `${incomplete ? `, ${incomplete} incomplete` : ''}, ${summary.failed.length} failed (from ${summary.logs} MassGen log${summary.logs === 1 ? '' : 's'} in ${summary.source})`,
      );
    });
}
