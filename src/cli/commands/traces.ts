import { Option } from 'commander';
import { UserError } from '../../errors.js';
import type { ExportFormat, ExportOptions } from '../../store/export.js';
import type { RolloutFilter } from '../../store/types.js';
import type { Context } from '../context.js';
import { decimalNumber, MAX_LIST, wholeNumber } from '../flags.js';
import { withInterrupt } from '../interrupt.js';
import type { Register } from '../register.js';
import { formatDuration, formatTime, taskOf, truncate } from '../ui/format.js';
import { renderTraceTree } from '../ui/trace-tree.js';
import { registerTracesImport } from './traces-import.js';

const STATUSES = ['running', 'completed', 'failed', 'cancelled'];

interface FilterFlags {
  run?: string;
  status?: RolloutFilter['status'];
  task?: string;
  minReward?: string;
  maxReward?: string;
  limit?: string;
}

export const registerTraces: Register = (program, ctx) => {
  const traces = program.command('traces').description('list, show and export recorded rollouts');
  const withFilters = (cmd: ReturnType<typeof traces.command>, limitDefault?: string) =>
    cmd
      .option('--run <id>', 'only this collect run')
      .addOption(new Option('--status <status>', 'only this status').choices(STATUSES))
      .option('--task <id>', 'only this task')
      .option('--min-reward <x>', 'total reward at least x')
      .option('--max-reward <x>', 'total reward at most x')
      .option('--limit <n>', 'at most n rollouts', limitDefault);

  withFilters(traces.command('list').description('list rollouts, newest first'), '50').action(
    async (flags: FilterFlags) => {
      const { ui, runtime } = ctx();
      const { listTraces } = await import('../../pipeline/utilities/traces.js');
      const { total, rollouts } = listTraces(await runtime(), toFilter(flags));
      if (ui.opts.json) return ui.json({ total, rollouts });
      if (!rollouts.length) return ui.print('no rollouts match');
      ui.table(
        ['rollout', 'task', 'status', 'reward', 'tokens', 'wall', 'started', 'answer'],
        rollouts.map((r) => [
          r.id,
          taskOf(r, 30),
          r.status,
          r.totalReward?.toFixed(3) ?? '—',
          r.tokens,
          formatDuration(r.wallMs),
          formatTime(r.startedAt),
          truncate(r.finalAnswer ?? r.error ?? '', 40),
        ]),
      );
      ui.print(`${rollouts.length} of ${total} rollout(s)`);
    },
  );

  traces
    .command('show <rollout>')
    .description('show a rollout as a tree of spans (id or unique prefix)')
    .action(async (id: string) => {
      const { ui, runtime } = ctx();
      const { showTrace } = await import('../../pipeline/utilities/traces.js');
      const detail = showTrace(await runtime(), id);
      if (ui.opts.json) return ui.json(detail);
      ui.print(renderTraceTree(detail, ui.c));
    });

  withFilters(
    traces
      .command('export')
      .description('export rollouts (with spans and rewards) as JSONL, or as OpenTelemetry spans to an OTLP endpoint'),
  )
    .option(
      '-o, --out <file>',
      'output file: a new path or a regular file (replaced once the export is complete); "-" for stdout',
    )
    .addOption(
      new Option(
        '--format <format>',
        'jsonl: our rollouts; orchestration-trace: one orchestration-trace JSON per line',
      ).choices(['jsonl', 'orchestration-trace'] satisfies ExportFormat[]),
    )
    .option(
      '--otlp [url]',
      'send the finished rollouts as OTLP spans to this OTLP/HTTP traces endpoint (default telemetry.otlp.endpoint); '
        + 'only those it has not acknowledged, so a second run sends the rest',
    )
    .addOption(
      new Option('--otlp-protocol <protocol>', 'OTLP/HTTP body (default telemetry.otlp.protocol)').choices([
        'protobuf',
        'json',
      ]),
    )
    .option('--again', 'with --otlp: send every matching rollout again (a span keeps its id)')
    .action(async (flags: FilterFlags & OtlpFlags & { out?: string; format?: ExportFormat }) => {
      if (flags.otlp !== undefined) return exportOtlp(flags, ctx);
      if (flags.otlpProtocol || flags.again) throw new UserError('--otlp-protocol and --again go with --otlp');
      flags.out ??= '-';
      flags.format ??= 'jsonl';
      const { ui, runtime } = ctx();
      const { exportTraces } = await import('../../pipeline/utilities/traces.js');
      const opts: ExportOptions = { ...toFilter(flags), format: flags.format };
      const result = await exportTraces(await runtime(), opts, flags.out === '-' ? process.stdout : flags.out);
      if (flags.out === '-') return;
      if (ui.opts.json) return ui.json(result);
      ui.print(`${ui.c.green('✓')} exported ${result.rollouts} rollout(s), ${result.spans} span(s) to ${result.file}`);
    });
  registerTracesImport(traces, ctx);
};

interface OtlpFlags {
  otlp?: string | true;
  otlpProtocol?: 'protobuf' | 'json';
  again?: boolean;
}

async function exportOtlp(flags: FilterFlags & OtlpFlags & { out?: string; format?: string }, ctx: () => Context) {
  if (flags.out !== undefined || flags.format !== undefined)
    throw new UserError('--otlp sends spans to an endpoint: it takes no --out or --format');
  const { ui, runtime } = ctx();
  const { exportTracesOtlp } = await import('../../pipeline/utilities/traces-otlp.js');
  const rt = await runtime();
  const stopping = 'stopping after the request under way (what the endpoint acknowledged is recorded)';
  const result = await withInterrupt(ui, stopping, (signal) =>
    exportTracesOtlp(rt, {
      endpoint: flags.otlp === true ? undefined : flags.otlp,
      protocol: flags.otlpProtocol,
      again: flags.again,
      filter: toFilter(flags),
      signal,
    }),
  );
  if (ui.opts.json) return ui.json(result);
  const before = result.already ? ` (${result.already} sent before)` : '';
  ui.print(
    `${ui.c.green('✓')} sent ${result.rollouts} rollout(s), ${result.spans} span(s) to ${result.target} in ${result.requests} request(s)${before}`,
  );
}

function toFilter(f: FilterFlags): RolloutFilter {
  return {
    runId: f.run,
    status: f.status,
    taskId: f.task,
    minReward: decimalNumber('--min-reward', f.minReward),
    maxReward: decimalNumber('--max-reward', f.maxReward),
    limit: f.limit === undefined ? undefined : wholeNumber('--limit', f.limit, MAX_LIST),
  };
}
