import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { LoadedConfig } from '../config/load.js';
import { ALGOS } from '../config/schema.js';
import { assertGates } from '../datasets/gates.js';
import type { Algo } from '../datasets/types.js';
import { buildDataset, type BuildDatasetResult } from '../datasets/build.js';
import { UserError } from '../errors.js';
import type { Checkpoint } from '../store/checkpoints.js';
import type { Store } from '../store/index.js';
import { executeTraining, type TrainProgress } from '../trainers/execute.js';
import { launchCommand } from './train/launch.js';
import { checkDisk, checkMemory, requireVenv, selectDevices } from '../trainers/preflight.js';
import { findResumable, type TrainRunDetail } from '../trainers/resume.js';
import { resolveStart, type TrainStart } from '../resources/training-start.js';
import { datasetOptions, trainerConfig, trainerConfigHash, writeTrainerConfig } from '../trainers/trainer-config.js';
import { startJudge } from './rewards.js';
import { withStore } from './store.js';
import { startRewardBridge } from '../rewards/bridge.js';

export type { TrainProgress } from '../trainers/execute.js';

export interface TrainOptions {
  algo?: string;
  /** Train on every stored trace, not only those since the start weights' watermark. */
  all?: boolean;
  /** Start from this checkpoint id or weights reference instead of train.base_model. */
  from?: string;
  maxSteps?: number;
  /** Continue a stopped run (true: the newest resumable one). */
  resume?: boolean | string;
  signal?: AbortSignal;
  onStage?: (message: string) => void;
  onProgress?: (p: TrainProgress) => void;
  /** Extra trainer environment. */
  env?: NodeJS.ProcessEnv;
}

export interface TrainResult {
  runId: string;
  algo: Algo;
  checkpoint: Checkpoint;
  weight: { name: string; version: number; path: string; adapter: boolean };
  dataset: TrainRunDetail['dataset'];
  start: TrainRunDetail['start'];
  metrics: Record<string, unknown>;
  steps: number;
  durationMs: number;
  logFile: string;
  resumedFrom: string | null;
}

/** Builds the dataset, runs the trainer and registers the checkpoint with its lineage. */
export async function train(loaded: LoadedConfig, opts: TrainOptions = {}): Promise<TrainResult> {
  const t = loaded.config.train;
  if (opts.resume && (opts.algo || opts.from || opts.all)) throw new UserError('--resume continues a run as it was started: it takes no --algo, --from or --all');
  const python = await requireVenv(loaded);
  if (!fs.existsSync(loaded.paths.storePath)) throw new UserError(`there are no traces to train on yet (no store at ${loaded.paths.storePath})`, 'run `massgen-rl collect` first');
  return withStore(loaded, async (store) => {
    const devices = await selectDevices(t.gpus);
    const prepared = opts.resume ? resumeRun(store, opts.resume) : await newRun(loaded, store, devices.cpu, opts);
    const { detail } = prepared;
    const algo = detail.algo as Algo;
    if (t.check_memory && !prepared.resumed) {
      const needsRef = (algo === 'dpo') || (algo === 'grpo' && t.grpo.beta > 0) || (algo === 'ppo' && t.ppo.beta > 0);
      checkMemory(startOf(detail), algo, t.lora.enabled, needsRef, detail.num_processes, devices);
    }
    checkDisk(loaded.paths.dataDir, startOf(detail), t.lora.enabled);
    const command = await launchCommand({ python, train: t, configFile: detail.config_file, algo, cpu: devices.cpu, baseDir: loaded.paths.baseDir, numProcesses: detail.num_processes });
    const bridge = await onlineRewards(loaded, store, detail, opts.signal);
    const runId = store.trainingRuns.start(detail as unknown as Record<string, unknown>, { algo, dataset_hash: detail.dataset.hash, log_path: detail.log_file });
    opts.onStage?.(`training ${algo} on ${detail.dataset.rows} examples (run ${runId}; log ${detail.log_file})`);
    const { outcome, registered, metrics } = await executeTraining({
      store, runId, detail, command, gpus: t.gpus, baseModel: detail.start.ref, signal: opts.signal, env: opts.env,
      timeoutMs: t.timeout_min ? t.timeout_min * 60_000 : undefined, onProgress: opts.onProgress, onStage: opts.onStage,
    }).finally(() => bridge?.close());
    const r = registered.resource;
    return {
      runId, algo, checkpoint: registered.checkpoint, weight: { name: r.name, version: r.version, path: r.path!, adapter: Boolean(r.metadata.adapter) },
      dataset: detail.dataset, start: detail.start, metrics, steps: outcome.stepCount, durationMs: outcome.durationMs, logFile: detail.log_file,
      resumedFrom: detail.resumed_from ?? null,
    };
  }, { mustExist: true });
}

async function newRun(loaded: LoadedConfig, store: Store, cpu: boolean, opts: TrainOptions): Promise<{ detail: TrainRunDetail; resumed: false }> {
  const t = loaded.config.train;
  const algo = (opts.algo ?? t.algo) as Algo;
  if (!(ALGOS as readonly string[]).includes(algo)) throw new UserError(`unknown algorithm "${opts.algo}"; choose one of ${ALGOS.join(', ')}`);
  if (opts.maxSteps !== undefined && (!Number.isInteger(opts.maxSteps) || opts.maxSteps < 1)) throw new UserError(`--max-steps ${opts.maxSteps}: expected a positive whole number`);
  const batch = t.batch_size * t.num_processes * t.gradient_accumulation_steps;
  if (algo === 'grpo' && batch % t.grpo.num_generations) {
    throw new UserError(`train.batch_size × train.num_processes × train.gradient_accumulation_steps (${batch}) must be a multiple of train.grpo.num_generations (${t.grpo.num_generations}) for grpo`);
  }
  const start = resolveStart(loaded, store, algo, opts.from);
  opts.onStage?.(`building the ${algo} dataset from traces${opts.all ? '' : ` after rollout #${start.watermark}`}`);
  const ds = await buildDataset(store, {
    algo, dataDir: loaded.paths.dataDir, sinceWatermark: start.watermark, all: opts.all, signal: opts.signal,
    options: datasetOptions(t, loaded.config.rewards.weights), configHash: loaded.hash, gates: t.gates,
  });
  if (ds.stats.rows === 0) throw emptyDataset(algo, ds, start, Boolean(opts.all));
  assertGates({ ...ds.stats, algo }, t.gates);
  const runDir = path.join(loaded.paths.dataDir, 'runs', `${algo}-${Date.now().toString(36)}-${process.pid}`);
  const outputDir = path.join(runDir, 'output');
  const cfg = trainerConfig({ train: t, algo, modelPath: start.dir, outputDir, datasetPath: path.join(ds.dir, 'data.jsonl'), cpu, maxSteps: opts.maxSteps, baseDir: loaded.paths.baseDir });
  const configFile = path.join(runDir, 'trainer.yaml');
  writeTrainerConfig(configFile, cfg);
  const detail: TrainRunDetail = {
    algo,
    start: { ref: start.ref, line: start.line, dir: start.dir, adapter: start.adapter, base_dir: start.baseDir, resource_id: start.resource?.id ?? null, checkpoint_id: start.checkpoint?.id ?? null, watermark: start.watermark },
    dataset: { dir: ds.dir, hash: ds.manifest.hash, rows: ds.stats.rows, watermark: { from: start.watermark, to: ds.watermark }, reused: ds.reused },
    config_file: configFile, config_hash: trainerConfigHash(cfg), output_dir: outputDir, log_file: path.join(runDir, 'trainer.log'), num_processes: t.num_processes,
  };
  return { detail, resumed: false };
}

function resumeRun(store: Store, resume: true | string): { detail: TrainRunDetail; resumed: true } {
  const { run, detail, checkpoint } = findResumable(store, resume === true ? undefined : resume);
  for (const [what, p] of [['dataset', detail.dataset.dir], ['start weights', detail.start.dir], ['trainer config', detail.config_file]] as const) {
    if (!fs.existsSync(p)) throw new UserError(`cannot resume ${run.id}: its ${what} is gone (${p})`);
  }
  const cfg = { ...(readYaml(detail.config_file)), resume_from_checkpoint: checkpoint };
  const configFile = detail.config_file.replace(/(-resume-\d+)?\.yaml$/, `-resume-${Date.now()}.yaml`);
  writeTrainerConfig(configFile, cfg);
  return { detail: { ...detail, config_file: configFile, resumed_from: run.id, resume_checkpoint: checkpoint }, resumed: true };
}

/**
 * Online GRPO scores its samples through the reward bridge: started for the run, its address written
 * into the trainer config (a resumed run gets a fresh one).
 */
async function onlineRewards(loaded: LoadedConfig, store: Store, detail: TrainRunDetail, signal?: AbortSignal): Promise<{ close(): Promise<void> } | undefined> {
  const cfg = readYaml(detail.config_file);
  if (detail.algo !== 'grpo' || cfg.mode !== 'online') return undefined;
  const judge = await startJudge(loaded, store);
  try {
    const bridge = await startRewardBridge({ store, rewards: loaded.config.rewards, judge: judge?.judge, signal });
    writeTrainerConfig(detail.config_file, { ...cfg, reward_url: bridge.url });
    return { close: async () => {
      await bridge.close();
      await judge?.stop();
    } };
  } catch (err) {
    await judge?.stop();
    throw err;
  }
}

function readYaml(file: string): Record<string, unknown> {
  return parseYaml(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
}

function startOf(detail: TrainRunDetail): TrainStart {
  const s = detail.start;
  return { ref: s.ref, line: s.line, dir: s.dir, adapter: s.adapter, baseDir: s.base_dir, resource: null, checkpoint: null, watermark: s.watermark };
}

function emptyDataset(algo: Algo, ds: BuildDatasetResult, start: TrainStart, all: boolean): UserError {
  const completed = ds.stats.rollouts_by_status.completed ?? 0;
  const dropped = Object.entries(ds.stats.dropped).map(([why, n]) => `${n} ${why}`).join(', ');
  const since = all ? 'in the store' : `after rollout #${start.watermark} (where the last ${algo} run on ${start.line} stopped)`;
  return new UserError(`no ${algo} examples: ${completed} completed rollout(s) ${since} yield none${dropped ? ` (left out: ${dropped})` : ''}`,
    all ? 'collect traces first (`massgen-rl collect`), or check train.' + algo + ' filters' : 'collect new traces (`massgen-rl collect`), or pass --all to train on every stored trace');
}
