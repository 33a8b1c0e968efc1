import { Option } from 'commander';
import { ALGOS, MAX_STEPS } from '../../config/schema.js';
import { positiveInt } from '../flags.js';
import { withInterrupt } from '../interrupt.js';
import type { Register } from '../register.js';
import { formatDuration } from '../ui/format.js';

interface TrainFlags {
  algo?: string;
  all?: boolean;
  from?: string;
  maxSteps?: string;
  resume?: boolean | string;
}

export const registerTrain: Register = (program, ctx) => {
  program
    .command('train')
    .description('turn stored traces into a dataset, train with GRPO, SFT, DPO or PPO, and register the checkpoint')
    .addOption(new Option('--algo <algo>', 'training algorithm (default train.algo)').choices([...ALGOS]))
    .option('--all', 'train on every stored trace, not only those since the start weights were trained')
    .option('--from <checkpoint|weights>', 'start from this checkpoint id or weights reference instead of train.base_model')
    .option('--max-steps <n>', 'stop after n optimizer steps (default train.max_steps, else train.epochs)')
    .option('--resume [run]', 'continue a stopped training run from its last checkpoint (default: the newest one)')
    .action(async (flags: TrainFlags) => {
      const { ui, runtime } = ctx();
      const { train } = await import('../../pipeline/train.js');
      const rt = await runtime();
      const bar = ui.progress('preparing');
      const stopping = 'stopping: the trainer saves a resumable checkpoint first (this can take a minute)';
      try {
        const r = await withInterrupt(ui, stopping, (signal) => train(rt, {
          algo: flags.algo, all: flags.all, from: flags.from, maxSteps: positiveInt('--max-steps', flags.maxSteps, MAX_STEPS), resume: flags.resume, signal,
          onStage: (m) => bar.update(m),
          onProgress: (p) => bar.update(`step ${p.step}${p.totalSteps ? `/${p.totalSteps}` : ''}  loss ${p.loss?.toFixed(4) ?? '—'}  reward ${p.reward?.toFixed(3) ?? '—'}${p.etaMs !== null ? `  ETA ${formatDuration(p.etaMs)}` : ''}`),
        }));
        bar.stop();
        if (ui.opts.json) return ui.json(r);
        const num = (k: string) => (typeof r.metrics[k] === 'number' ? (r.metrics[k] as number).toFixed(4) : '—');
        ui.table(['run', 'algo', 'examples', 'steps', 'final loss', 'final reward', 'time', 'checkpoint', 'weights'], [[
          r.runId, r.algo, r.dataset.rows, r.steps, num('final_loss'), num('final_reward'), formatDuration(r.durationMs), r.checkpoint.id,
          `${r.weight.name} v${r.weight.version}${r.weight.adapter ? ' (LoRA)' : ''}`,
        ]]);
        ui.print(`  from ${r.start.ref}${r.start.checkpoint_id ? ` (checkpoint ${r.start.checkpoint_id})` : ''}; traces after rollout #${r.dataset.watermark.from} up to #${r.dataset.watermark.to}; dataset ${r.dataset.hash.slice(0, 12)}`);
        ui.print(`  serve it: massgen-rl serve --weights resource:${r.weight.name}@${r.weight.version}`);
      } catch (err) {
        bar.stop();
        throw err;
      }
    });
};
