import type { Command } from 'commander';
import { UserError } from '../../errors.js';
import type { Context } from '../context.js';

interface ImportFlags {
  massgenLogs?: string;
  otlp?: string;
  skipInvalid?: boolean;
}

/** Adds `traces import` to the `traces` command: MassGen log directories become rollouts. */
export function registerTracesImport(traces: Command, ctx: () => Context): void {
  traces
    .command('import')
    .description(
      'import MassGen logs (.massgen/massgen_logs/log_*/turn_N[/attempt_M]) or exported OpenTelemetry spans as '
        + 'rollouts; re-importing skips what is stored',
    )
    .option(
      '--massgen-logs <dir>',
      'a massgen_logs directory, one log_<timestamp> directory, or a project holding .massgen/',
    )
    .option(
      '--otlp <path>',
      'OTLP trace exports (a protobuf .pb/.binpb file, an OTLP/JSON .json file, JSON lines of requests, or a '
        + 'directory of them): GenAI spans of any instrumented agent, one rollout per session',
    )
    .option('--skip-invalid', 'import the valid turns and list the malformed ones, instead of importing nothing', false)
    .action(async (flags: ImportFlags) => {
      const { ui, runtime } = ctx();
      if ((flags.massgenLogs === undefined) === (flags.otlp === undefined))
        throw new UserError('give one of --massgen-logs DIR and --otlp PATH');
      if (flags.otlp !== undefined) {
        const { importOtlp } = await import('../../pipeline/utilities/import-otlp.js');
        const r = await importOtlp(await runtime(), flags.otlp);
        if (ui.opts.json) return ui.json({ ok: true, ...r });
        const kept = `${r.spans.llm} model calls, ${r.spans.tool} tool calls, ${r.spans.message} other spans`;
        return ui.print(
          `${ui.c.green('✓')} ${r.received} span(s) from ${r.files} file(s): ${r.created} new rollout(s), ${r.extended} extended; `
            + `${kept}; ${r.duplicates} stored already`,
        );
      }
      const { importMassgenLogs } = await import('../../pipeline/utilities/import-massgen.js');
      const summary = importMassgenLogs(await runtime(), { dir: flags.massgenLogs!, skipInvalid: flags.skipInvalid });
      if (ui.opts.json) return ui.json({ ok: true, ...summary });
      const where = (u: { log: string; turn: number; attempt: number | null }) =>
        `${u.log} turn ${u.turn}${u.attempt === null ? '' : ` attempt ${u.attempt}`}`;
      const rows: (string | number)[][] = [
        ...summary.imported.map((u) => [
          where(u),
          'imported',
          u.rollout_id,
          `${u.status}, winner ${u.winner ?? '—'}, ${u.answers} answers, ${u.votes} votes, ${u.rounds} rounds`
            + (u.gateway_calls === undefined ? '' : `, ${u.gateway_calls} captured calls joined`)
            + (u.otlp_calls === undefined ? '' : `, ${u.otlp_calls} traced calls joined`),
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
