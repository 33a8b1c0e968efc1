import { Option } from 'commander';
import { ALGOS, MAX_STEPS, POLICY_KINDS } from '../../config/schema.js';
import { wholeNumber } from '../flags.js';
import { withInterrupt } from '../interrupt.js';
import type { Register } from '../register.js';
import { formatDuration } from '../ui/format.js';
import type { Ui } from '../ui/output.js';
import type { Runtime } from '../../runtime/runtime.js';
import { InterruptedError, UserError } from '../../errors.js';
import { apoStepLine, renderApo } from './train-apo-render.js';

interface TrainFlags {
  algo?: string;
  policy?: string;
  all?: boolean;
  from?: string;
  maxSteps?: string;
  resume?: boolean | string;
  machineRank?: string;
}

export const registerTrain: Register = (program, ctx) => {
  program
    .command('train')
    .description('turn stored traces into a dataset, train with GRPO, SFT, DPO or PPO, and register the checkpoint; or fit an orchestration policy (--algo bandit)')
    .addOption(new Option('--algo <algo>', 'training algorithm (default train.algo); bandit fits the --policy decision from logged decisions; apo optimizes the team\'s prompts (apo.*)').choices([...ALGOS, 'bandit', 'apo']))
    .addOption(new Option('--policy <kind>', 'with --algo bandit: the decision to learn').choices([...POLICY_KINDS]))
    .option('--all', 'train on every stored trace, not only those since the start weights were trained')
    .option('--from <checkpoint|weights>', 'start from this checkpoint id or weights reference instead of train.base_model')
    .option('--max-steps <n>', 'stop after n optimizer steps (default train.<algo>.max_steps, else train.<algo>.num_train_epochs)')
    .option('--resume [run]', 'continue a stopped training run from its last checkpoint (default: the newest one)')
    .option('--machine-rank <n>', 'this machine\'s rank when train.num_machines > 1 (default train.machine_rank): 0 records the run, the others train along with it')
    .action(async (flags: TrainFlags) => {
      const { ui, runtime } = ctx();
      const rankFlag = flags.machineRank === undefined ? undefined : wholeNumber('--machine-rank', flags.machineRank, Number.MAX_SAFE_INTEGER, 0);
      if (rankFlag !== undefined && (flags.algo === 'bandit' || flags.algo === 'apo')) throw new UserError(`--machine-rank goes with the trainers (${ALGOS.join(', ')}), not --algo ${flags.algo}`);
      if (flags.algo === 'bandit') return renderPolicy(ui, await (await import('../../pipeline/train-policy.js')).trainPolicy(await runtime(), { policy: flags.policy }));
      if (flags.policy) throw new UserError('--policy goes with --algo bandit');
      if (flags.algo === 'apo') {
        if (flags.all || flags.from || flags.maxSteps) throw new UserError('--algo apo takes none of --all, --from, --max-steps (its budgets are apo.budget.*)');
        const { trainApo } = await import('../../pipeline/train-apo.js');
        const rt = await runtime();
        const r = await withInterrupt(ui, 'stopping: the step in progress is dropped; resume with `massgen-rl train --algo apo --resume`', (signal) => trainApo(rt, {
          resume: flags.resume, signal, onStage: (m) => ui.info(m), onStep: (p, f, spent) => ui.info(apoStepLine(p, f, spent, rt.config.apo)),
        }));
        renderApo(ui, r);
        if (r.status === 'cancelled') throw new InterruptedError(`prompt optimization interrupted after ${r.proposals.length} proposal(s); resume with \`massgen-rl train --algo apo --resume\``);
        return;
      }
      const rt = await runtime();
      const { machineRank } = await import('../../trainers/machines.js');
      if (machineRank(rt.config.train, rankFlag) > 0) return trainAlong(ui, rt, flags, rankFlag);
      const { train } = await import('../../pipeline/train.js');
      const bar = ui.progress('preparing');
      const stopping = 'stopping: the trainer saves a resumable checkpoint first (this can take a minute)';
      try {
        const r = await withInterrupt(ui, stopping, (signal) => train(rt, {
          algo: flags.algo, all: flags.all, from: flags.from, maxSteps: wholeNumber('--max-steps', flags.maxSteps, MAX_STEPS), resume: flags.resume, signal, machineRank: rankFlag,
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

/** A machine other than 0 of a multi-machine run: its share of the trainer processes, nothing recorded here. */
async function trainAlong(ui: Ui, rt: Runtime, flags: TrainFlags, rank: number | undefined): Promise<void> {
  if (flags.resume) throw new UserError('--resume: a run over several machines cannot be resumed; machine 0 holds its checkpoint');
  const { trainWorker } = await import('../../pipeline/train-worker.js');
  const bar = ui.progress('preparing');
  try {
    const r = await withInterrupt(ui, 'stopping: every machine saves the checkpoint step first', (signal) => trainWorker(rt, {
      algo: flags.algo, all: flags.all, from: flags.from, maxSteps: wholeNumber('--max-steps', flags.maxSteps, MAX_STEPS), machineRank: rank, signal,
      onStage: (m) => bar.update(m),
    }));
    bar.stop();
    if (ui.opts.json) return ui.json(r);
    ui.print(`machine ${r.machineRank} of ${r.numMachines}: trained ${r.algo} along with machine 0 (${r.processes} process${r.processes === 1 ? '' : 'es'} here, ${r.dataset.rows} examples, dataset ${r.dataset.hash.slice(0, 12)}, ${formatDuration(r.durationMs)})`);
    ui.print(`  the run, its metrics and its checkpoint are recorded on machine 0; log here: ${r.logFile}`);
  } catch (err) {
    bar.stop();
    throw err;
  }
}

type PolicyResult = Awaited<ReturnType<typeof import('../../pipeline/train-policy.js').trainPolicy>>;

function renderPolicy(ui: Ui, r: PolicyResult): void {
  if (ui.opts.json) return ui.json(r);
  const ci = (e: { mean: number; low: number; high: number }) => `${e.mean.toFixed(3)} [${e.low.toFixed(3)}, ${e.high.toFixed(3)}]`;
  ui.table(['run', 'policy', 'algorithm', 'decisions', 'rollouts', 'arms taken', 'candidate set'], [[
    r.runId, `${r.policy.kind} v${r.policy.version}`, r.policy.algorithm, r.decisions, r.rollouts,
    Object.entries(r.armCounts).map(([a, n]) => `${a} ${n}`).join(', '), `v${r.candidateSet.version}`,
  ]]);
  const rows = [['logged (behaviour)', ci(r.ope.logged), '', ''], ['learned policy (greedy)', ci(r.ope.ips), ci(r.ope.snips), ci(r.ope.dr)]];
  if (r.noPolicy) rows.push(['no policy', ci(r.noPolicy.ips), ci(r.noPolicy.snips), ci(r.noPolicy.dr)]);
  ui.table(['value (reward − token cost)', 'IPS', 'SNIPS', 'doubly robust'], rows);
  ui.print(`  effective sample size ${r.ope.effectiveSampleSize.toFixed(1)} of ${r.rollouts}; evaluate it: massgen-rl eval --candidate policy:${r.policy.kind}@${r.policy.version}`);
}
