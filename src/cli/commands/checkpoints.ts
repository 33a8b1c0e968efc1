import { UserError } from '../../errors.js';
import type { PruneResult } from '../../pipeline/utilities/checkpoints.js';
import type { Checkpoint } from '../../store/checkpoints.js';
import type { Context } from '../context.js';
import { MAX_LIST, wholeNumber } from '../flags.js';
import type { Register } from '../register.js';
import { formatTime, truncate } from '../ui/format.js';

export const registerCheckpoints: Register = (program, ctx) => {
  const cmd = program
    .command('checkpoints')
    .description('list, inspect, prune and fork trained checkpoints (weights with lineage)');

  cmd
    .command('list')
    .description('checkpoints, newest first')
    .option('--algo <algo>', 'only this algorithm')
    .option('--limit <n>', 'at most n', '50')
    .action(async (flags: { algo?: string; limit: string }) => {
      const { ui, runtime } = ctx();
      const { listCheckpoints } = await import('../../pipeline/utilities/checkpoints.js');
      const limit = wholeNumber('--limit', flags.limit, MAX_LIST);
      const rows = listCheckpoints(await runtime(), { algo: flags.algo, limit });
      if (ui.opts.json) return ui.json({ checkpoints: rows });
      if (!rows.length) return ui.print('no checkpoints yet (`massgen-rl train` records them)');
      ui.table(
        ['checkpoint', 'weight', 'parent', 'algo', 'dataset', 'metrics', 'created'],
        rows.map((ck) => [
          ck.id,
          `${weight(ck)}${ck.production ? ' (production)' : ''}`,
          ck.parentId ?? `base: ${ck.baseModel ?? '—'}`,
          ck.algo ?? '—',
          ck.datasetHash?.slice(0, 12) ?? '—',
          metrics(ck.metrics, 3),
          formatTime(ck.createdAt),
        ]),
      );
    });

  cmd
    .command('show <checkpoint>')
    .description('one checkpoint with its full lineage (id or unique prefix)')
    .action(async (ref: string) => {
      const { ui, runtime } = ctx();
      const { showCheckpoint } = await import('../../pipeline/utilities/checkpoints.js');
      const d = showCheckpoint(await runtime(), ref);
      if (ui.opts.json) return ui.json(d);
      const ck = d.checkpoint;
      ui.print(`${ui.c.bold(ck.id)}  ${weight(ck)}${d.production ? ui.c.green(' (production)') : ''}`);
      const fields: [string, unknown][] = [
        ['path', ck.path],
        ['algo', ck.algo],
        ['adapter', d.resource?.metadata.adapter],
        ['base model', ck.baseModel],
        ['base path', d.resource?.metadata.base_path],
        ['imported', d.resource?.metadata.imported_from],
        ['dataset', ck.datasetHash],
        ['watermark', ck.watermark],
        ['traces', ck.traceIds.length],
        ['config', ck.configHash],
        ['training run', ck.trainingRunId],
        ['metrics', metrics(ck.metrics, Infinity)],
        ['created', formatTime(ck.createdAt)],
      ];
      for (const [k, v] of fields)
        if (v !== null && v !== undefined && v !== '') ui.print(`  ${k.padEnd(12)} ${String(v)}`);
      ui.print('lineage:');
      for (const [i, c] of [ck, ...d.lineage].entries())
        ui.print(`  ${'  '.repeat(i)}${i ? '↳ ' : ''}${c.id}  ${weight(c)}  ${c.algo ?? ''}  ${metrics(c.metrics, 2)}`);
      ui.print(`  ${'  '.repeat(d.lineage.length + 1)}↳ base: ${(d.lineage.at(-1) ?? ck).baseModel ?? '—'}`);
      if (d.children.length) ui.print(`children: ${d.children.map((c) => `${c.id} (${weight(c)})`).join(', ')}`);
    });

  cmd
    .command('prune')
    .description('delete old checkpoints and their folders (never production or an ancestor of a kept one)')
    .requiredOption('--keep-last <n>', 'keep the newest n checkpoints')
    .option('--keep-best <metric[:max|min]>', 'also keep the best by this metric (loss-like metrics: min, others: max)')
    .option('--dry-run', 'show what would be deleted', false)
    .action(async (flags: { keepLast: string; keepBest?: string; dryRun: boolean }) => {
      const c = ctx();
      const keepLast = wholeNumber('--keep-last', flags.keepLast, MAX_LIST);
      const { prune, parseKeepBest } = await import('../../pipeline/utilities/checkpoints.js');
      const keepBest = flags.keepBest === undefined ? undefined : parseKeepBest(flags.keepBest);
      const result = await prune(await c.runtime(), {
        keepLast,
        keepBest,
        dryRun: flags.dryRun,
        confirm: c.opts.yes ? undefined : (plan) => confirmPrune(c, plan),
      });
      if (c.ui.opts.json) return c.ui.json(result);
      if ('cancelled' in result) return c.ui.print('nothing deleted');
      showPrune(c.ui, result);
    });

  cmd
    .command('fork <checkpoint>')
    .description('start a new line: weight resource NAME v1 on the same files, parent = the checkpoint')
    .requiredOption('--name <name>', 'the new weight resource name')
    .action(async (ref: string, flags: { name: string }) => {
      const { ui, runtime } = ctx();
      const { fork } = await import('../../pipeline/utilities/checkpoints.js');
      const forked = fork(await runtime(), ref, flags.name);
      if (ui.opts.json) return ui.json(forked);
      ui.print(
        `${ui.c.green('✓')} forked ${forked.checkpoint.parentId} as ${forked.resource.name} v${forked.resource.version} (checkpoint ${forked.checkpoint.id}); train on it with train.base_model: resource:${forked.resource.name}`,
      );
    });

  cmd
    .command('import <folder>')
    .description(
      'register weights trained elsewhere (a LoRA adapter or model folder) as the next checkpoint of their line',
    )
    .option(
      '--from <weights>',
      "what they were trained from: a checkpoint, resource:NAME@V, builtin:NAME or a folder (default: production's weights)",
    )
    .option('--algo <algo>', 'the algorithm that trained them, as the checkpoint records it', 'imported')
    .action(async (folder: string, flags: { from?: string; algo: string }) => {
      const { ui, runtime } = ctx();
      const { importWeights } = await import('../../pipeline/utilities/checkpoints.js');
      const r = importWeights(await runtime(), folder, flags);
      if (ui.opts.json) return ui.json(r);
      const kind = r.resource.metadata.adapter ? 'adapter' : 'model';
      ui.print(
        `${ui.c.green('✓')} imported ${folder} as checkpoint ${r.checkpoint.id}: ${r.resource.name} v${r.resource.version} (${kind}, copied to ${r.resource.path})`,
      );
      ui.print(`next: massgen-rl eval --candidate ${r.checkpoint.id}`);
    });
};

async function confirmPrune(c: Context, plan: PruneResult): Promise<boolean> {
  const what = `${plan.deleted.length} checkpoint(s) and their folders`;
  if (!c.interactive)
    throw new UserError(
      `checkpoints prune would delete ${what}; pass --yes to confirm (there is no prompt in a non-interactive session)`,
      'add --dry-run to see the plan first',
    );
  showPrune(c.ui, plan);
  const { select } = await import('../ui/prompts.js');
  return select({
    message: `Delete ${what}?`,
    choices: [
      { name: 'no', value: false },
      { name: 'yes, delete them', value: true },
    ],
  });
}

function showPrune(ui: Context['ui'], r: PruneResult): void {
  if (!r.deleted.length) return ui.print(`nothing to prune (${r.kept.length} checkpoint(s) kept)`);
  ui.table(
    ['checkpoint', 'weight', r.dryRun ? 'would delete' : 'files'],
    r.deleted.map((d) => [
      d.id,
      d.weight ?? '—',
      r.dryRun ? d.path : d.filesRemoved ? `removed ${d.path}` : `left ${d.path} (${d.filesKept})`,
    ]),
  );
  ui.print(
    `${r.dryRun ? 'would delete' : 'deleted'} ${r.deleted.length}, kept ${r.kept.length}: ${r.kept.map((k) => `${k.id} (${k.reasons.join(', ')})`).join('; ')}`,
  );
}

const weight = (ck: Checkpoint) => (ck.resourceName ? `${ck.resourceName} v${ck.resourceVersion}` : '—');

function metrics(m: Record<string, unknown>, max: number): string {
  const parts = Object.entries(m)
    .filter(([, v]) => typeof v === 'number')
    .slice(0, max)
    .map(([k, v]) => `${k}=${Number((v as number).toPrecision(4))}`);
  return truncate(parts.join(' '), max === Infinity ? 400 : 60) || '—';
}
