import { Option, type Command } from 'commander';
import { ALGOS, MAX_STEPS } from '../../config/schema.js';
import { UserError } from '../../errors.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { Context } from '../context.js';
import { wholeNumber } from '../flags.js';
import { withInterrupt } from '../interrupt.js';
import { formatDuration } from '../ui/format.js';
import type { Ui } from '../ui/output.js';
import { grpoSummaryLine } from './train-summary.js';

interface WeightsFlags {
  algo?: string;
  all?: boolean;
  from?: string;
  maxSteps?: string;
  resume?: boolean | string;
  machineRank?: string;
}

/** `train weights` (what `train` runs without a kind): a dataset from the traces, a trainer run, a checkpoint. */
export function registerTrainWeights(train: Command, ctx: () => Context): Command {
  return train
    .command('weights')
    .description(
      'turn stored traces into a dataset, train the weights with GRPO, SFT, DPO or PPO, and register the checkpoint (`massgen-rl train` alone does this)',
    )
    .addOption(new Option('--algo <algo>', 'training algorithm (default train.algo)').choices([...ALGOS]))
    .option(
      '--all',
      'train on every stored trace, not only those since the start weights were trained (train.traces: all for every run)',
    )
    .option(
      '--from <checkpoint|weights>',
      'start from this checkpoint id or weights reference instead of train.base_model',
    )
    .option(
      '--max-steps <n>',
      'stop after n optimizer steps (default train.<algo>.max_steps, else train.<algo>.num_train_epochs)',
    )
    .option('--resume [run]', 'continue a stopped training run from its last checkpoint (default: the newest one)')
    .option(
      '--machine-rank <n>',
      "this machine's rank when train.num_machines > 1 (default train.machine_rank): 0 records the run, the others train along with it",
    )
    .action(async (flags: WeightsFlags) => {
      const { ui, runtime } = ctx();
      const rankFlag = wholeNumber('--machine-rank', flags.machineRank, Number.MAX_SAFE_INTEGER, 0);
      const rt = await runtime();
      const { machineRank } = await import('../../trainers/machines.js');
      if (machineRank(rt.config.train, rankFlag) > 0) return trainAlong(ui, rt, flags, rankFlag);
      const { teamRoles } = await import('../../pipeline/roles.js');
      if (!teamRoles(rt.config).implicit) {
        const given = (['algo', 'from', 'resume'] as const).filter((k) => flags[k] !== undefined);
        if (given.length)
          throw new UserError(
            `--${given[0]}: with roles, each role trains with its own recipe from its own line (roles.<name>.recipe)`,
            'leave the flag out, or remove roles from the config to train the one team',
          );
        const { trainRolesCommand } = await import('./train-roles.js');
        return trainRolesCommand(ui, rt, {
          all: flags.all,
          maxSteps: wholeNumber('--max-steps', flags.maxSteps, MAX_STEPS),
        });
      }
      const { train: trainWeights } = await import('../../pipeline/train/train.js');
      const bar = ui.progress('preparing');
      const stopping = 'stopping: the trainer saves a resumable checkpoint first (this can take a minute)';
      try {
        const r = await withInterrupt(ui, stopping, (signal) =>
          trainWeights(rt, {
            algo: flags.algo,
            all: flags.all,
            from: flags.from,
            maxSteps: wholeNumber('--max-steps', flags.maxSteps, MAX_STEPS),
            resume: flags.resume,
            signal,
            machineRank: rankFlag,
            onStage: (m) => bar.update(m),
            onProgress: (p) =>
              bar.update(
                `step ${p.step}${p.totalSteps ? `/${p.totalSteps}` : ''}  loss ${p.loss?.toFixed(4) ?? '—'}  reward ${p.reward?.toFixed(3) ?? '—'}${p.completionTokens !== null ? `  ${p.completionTokens.toFixed(0)} tokens/answer` : ''}${p.etaMs !== null ? `  ETA ${formatDuration(p.etaMs)}` : ''}`,
              ),
          }),
        );
        bar.stop();
        if (ui.opts.json) return ui.json(r);
        const num = (k: string) => (typeof r.metrics[k] === 'number' ? (r.metrics[k] as number).toFixed(4) : '—');
        ui.table(
          ['run', 'algo', 'examples', 'steps', 'final loss', 'final reward', 'time', 'checkpoint', 'weights'],
          [
            [
              r.runId,
              r.algo,
              r.dataset.rows,
              r.steps,
              num('final_loss'),
              num('final_reward'),
              formatDuration(r.durationMs),
              r.checkpoint.id,
              `${r.weight.name} v${r.weight.version}${r.weight.adapter ? ' (LoRA)' : ''}`,
            ],
          ],
        );
        ui.print(
          `  from ${r.start.ref}${r.start.checkpoint_id ? ` (checkpoint ${r.start.checkpoint_id})` : ''}; traces after rollout #${r.dataset.watermark.from} up to #${r.dataset.watermark.to}; dataset ${r.dataset.hash.slice(0, 12)}`,
        );
        const grpo = grpoSummaryLine(r.metrics);
        if (grpo) ui.print(grpo);
        ui.print(`  serve it: massgen-rl serve --weights resource:${r.weight.name}@${r.weight.version}`);
      } catch (err) {
        bar.stop();
        throw err;
      }
    });
}

/** A machine other than 0 of a multi-machine run: its share of the trainer processes, nothing recorded here. */
async function trainAlong(ui: Ui, rt: Runtime, flags: WeightsFlags, rank: number | undefined): Promise<void> {
  if (flags.resume)
    throw new UserError('--resume: a run over several machines cannot be resumed; machine 0 holds its checkpoint');
  const { trainWorker } = await import('../../pipeline/train/worker.js');
  const bar = ui.progress('preparing');
  try {
    const r = await withInterrupt(ui, 'stopping: every machine saves the checkpoint step first', (signal) =>
      trainWorker(rt, {
        algo: flags.algo,
        all: flags.all,
        from: flags.from,
        maxSteps: wholeNumber('--max-steps', flags.maxSteps, MAX_STEPS),
        machineRank: rank,
        signal,
        onStage: (m) => bar.update(m),
      }),
    );
    bar.stop();
    if (ui.opts.json) return ui.json(r);
    ui.print(
      `machine ${r.machineRank} of ${r.numMachines}: trained ${r.algo} along with machine 0 (${r.processes} process${r.processes === 1 ? '' : 'es'} here, ${r.dataset.rows} examples, dataset ${r.dataset.hash.slice(0, 12)}, ${formatDuration(r.durationMs)})`,
    );
    ui.print(`  the run, its metrics and its checkpoint are recorded on machine 0; log here: ${r.logFile}`);
  } catch (err) {
    bar.stop();
    throw err;
  }
}
