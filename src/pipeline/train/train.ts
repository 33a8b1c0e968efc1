import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ALGOS, type Algo, type RLConfig, type TrainConfig } from '../../config/schema.js';
import { buildDataset, type BuildDatasetResult } from '../../datasets/build.js';
import { assertGates } from '../../datasets/gates.js';
import { datasetOptionsFromConfig } from '../../datasets/options.js';
import { buildRoleDatasets } from '../../datasets/roles.js';
import { NotEnoughData, UserError } from '../../errors.js';
import { withAgentWeights, withWeights } from '../../resources/sets.js';
import { resolveLineStart, resolveStart, type TrainStart } from '../../resources/training-start.js';
import { startRewardBridge } from '../../rewards/bridge.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { LocalServer } from '../../serving/local-server.js';
import type { Checkpoint } from '../../store/checkpoints.js';
import type { Resource, ResourceSet, SetOrigin, Store } from '../../store/index.js';
import { executeTraining, type TrainProgress } from '../../trainers/execute.js';
import { launchCommand } from '../../trainers/launch.js';
import { machineRank, processesPerMachine } from '../../trainers/machines.js';
import { checkDisk, checkMemory, requireVenv, selectDevices, type Devices } from '../../trainers/preflight.js';
import { stopLeftover } from '../../trainers/process-group.js';
import { findResumable, type TrainRunDetail } from '../../trainers/resume.js';
import { checkTrainerSettings } from '../../trainers/settings-check.js';
import {
  needsRewardBridge,
  readTrainerConfig,
  trainerConfig,
  trainerConfigHash,
  writeTrainerConfig,
  type TrainerConfig,
} from '../../trainers/trainer-config.js';
import { examplesTrained } from '../../util/profile-counters.js';
import { syncProduction } from '../production-sync.js';
import { implicitRun, type RoleRun } from '../roles.js';
import { trainAugment } from './augment.js';
import { needsGenerationServer, startGenerationServer } from './generation.js';

export type { TrainProgress } from '../../trainers/execute.js';

export interface TrainOptions {
  algo?: string;
  /** Train on every stored trace, not only those since the start weights' watermark (default train.traces). */
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
  /** Called with the training run's id as soon as it is recorded (the loop keeps it to resume the run). */
  onRunStart?: (runId: string) => void;
  /** This machine's rank over train.num_machines (default train.machine_rank); only machine 0 runs `train`. */
  machineRank?: number;
  /** The role to train (roles.ts; default: the implicit role, the whole team on train's recipe and --algo). */
  role?: RoleRun;
}

export interface TrainResult {
  runId: string;
  /** Production with the new weights swapped in, ready for `eval` (null when no agent serves this line). */
  candidateSet: { id: string; version: number } | null;
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

/** A run about to start: its record and its trainer config, not yet written. */
export interface PreparedRun {
  detail: TrainRunDetail;
  config: TrainerConfig;
  resumed: boolean;
}

/** Builds the dataset, runs the trainer and registers the checkpoint with its lineage. */
export async function train(rt: Runtime, opts: TrainOptions = {}): Promise<TrainResult> {
  const t = rt.config.train;
  if (opts.resume && (opts.algo || opts.from || opts.all))
    throw new UserError('--resume continues a run as it was started: it takes no --algo, --from or --all');
  const rank = machineRank(t, opts.machineRank);
  if (rank > 0) {
    throw new UserError(
      `machine ${rank} of ${t.num_machines} only trains along with machine 0, which records the run (train.machine_rank / --machine-rank)`,
      'run `massgen-rl train --machine-rank ' + rank + '` here while machine 0 runs `massgen-rl train` (or its loop)',
    );
  }
  if (opts.resume && t.num_machines > 1) {
    throw new UserError(
      `--resume: a run over ${t.num_machines} machines cannot be resumed (the other machines hold no checkpoint to continue from)`,
      'start a new run, or resume it on this machine alone with train.num_machines: 1',
    );
  }
  const python = await requireVenv(rt.paths.venvDir);
  if (!rt.storeExists())
    throw new UserError(
      `there are no traces to train on yet (no store at ${rt.paths.storePath})`,
      'run `massgen-rl collect` first',
    );
  const store = rt.existingStore();
  const devices = await selectDevices(t.gpus);
  const prepared = opts.resume
    ? await resumeRun(store, opts.resume)
    : await newRun(rt, store, devices.cpu, { ...opts, python });
  const { detail } = prepared;
  const algo = detail.algo as Algo;
  checkRoom(rt, prepared, devices, !prepared.resumed);
  const command = await launchCommand({
    python,
    train: t,
    configFile: detail.config_file,
    algo,
    cpu: devices.cpu,
    baseDir: rt.paths.baseDir,
    numProcesses: detail.num_processes,
    machineRank: 0,
  });
  return withTrainerConfig(rt, store, prepared, opts.signal, async () => {
    const runId = await store.retrying(() =>
      store.trainingRuns.start(detail as unknown as Record<string, unknown>, {
        algo,
        dataset_hash: detail.dataset.hash,
        log_path: detail.log_file,
      }),
    );
    opts.onRunStart?.(runId);
    const over =
      t.num_machines > 1
        ? ` over ${t.num_machines} machines (the others join at ${t.main_process_ip}, \`massgen-rl train --machine-rank N\`)`
        : '';
    opts.onStage?.(`training ${algo} on ${detail.dataset.rows} examples${over} (run ${runId}; log ${detail.log_file})`);
    const { outcome, registered, metrics } = await executeTraining({
      store,
      runId,
      detail,
      command,
      gpus: t.gpus,
      baseModel: detail.start.ref,
      signal: opts.signal,
      env: opts.env,
      timeoutMs: t.timeout_min ? t.timeout_min * 60_000 : undefined,
      onProgress: opts.onProgress,
      onStage: opts.onStage,
    });
    examplesTrained(detail.dataset.rows, outcome.steps.at(-1)?.epoch);
    rt.forgetWeights();
    const r = registered.resource;
    const candidate = candidateSet(rt, r, opts.role?.context ? opts.role.agents : undefined, {
      kind: 'training',
      training_run_id: runId,
      checkpoint_id: registered.checkpoint.id,
      weight_id: r.id,
    });
    return {
      candidateSet: candidate ? { id: candidate.id, version: candidate.version } : null,
      runId,
      algo,
      checkpoint: registered.checkpoint,
      weight: { name: r.name, version: r.version, path: r.path!, adapter: Boolean(r.metadata.adapter) },
      dataset: detail.dataset,
      start: detail.start,
      metrics,
      steps: outcome.stepCount,
      durationMs: outcome.durationMs,
      logFile: detail.log_file,
      resumedFrom: detail.resumed_from ?? null,
    };
  });
}

/**
 * fn once the run's trainer config is written. Online GRPO scores its samples through a reward bridge, and may
 * sample them from the built-in server (train-generation.ts): both started for the run (a resumed run gets fresh
 * ones) and closed when fn ends.
 */
export async function withTrainerConfig<T>(
  rt: Runtime,
  store: Store,
  { detail, config }: Pick<PreparedRun, 'detail' | 'config'>,
  signal: AbortSignal | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  const bridge = needsRewardBridge(config)
    ? await startRewardBridge({ store, rewards: rt.config.rewards, judge: await rt.judge(), signal })
    : undefined;
  let generator: LocalServer | undefined;
  try {
    if (bridge && needsRewardBridge(config)) config.reward_url = bridge.url;
    if (needsGenerationServer(config, Boolean(rt.config.train.script))) {
      generator = await startGenerationServer(rt.paths.venvDir, detail, signal);
      config.server_url = generator.baseUrl;
    } else if ('server_url' in config) config.server_url = null;
    writeTrainerConfig(detail.config_file, config);
    return await fn();
  } finally {
    await generator?.stop();
    await bridge?.close();
  }
}

/** A new run's dataset, start weights and trainer config (built alike on every machine of a multi-machine run). */
export async function newRun(
  rt: Runtime,
  store: Store,
  cpu: boolean,
  opts: TrainOptions & { python: string },
  runTag = '',
): Promise<PreparedRun> {
  const role = opts.role ?? implicitRun(rt.config, opts.algo);
  const own = role.context !== null;
  const t = own ? withRecipe(rt.config.train, role.recipe) : rt.config.train;
  const algo = role.recipe.algo;
  if (!(ALGOS as readonly string[]).includes(algo))
    throw new UserError(`unknown algorithm "${opts.algo}"; choose one of ${ALGOS.join(', ')}`);
  if (opts.maxSteps !== undefined && (!Number.isInteger(opts.maxSteps) || opts.maxSteps < 1))
    throw new UserError(`--max-steps ${opts.maxSteps}: expected a positive whole number`);
  const extra = opts.maxSteps === undefined ? undefined : { max_steps: opts.maxSteps };
  const settings = (
    await checkTrainerSettings({ python: opts.python, train: t, algos: [algo], extra, signal: opts.signal })
  )[algo]!;
  const start = roleStart(rt, store, role, opts.from);
  const all = opts.all ?? t.traces === 'all';
  const of = own ? ` of role ${role.name}` : '';
  opts.onStage?.(`building the ${algo} dataset${of} from traces${all ? '' : ` after rollout #${start.watermark}`}`);
  const common = {
    dataDir: rt.paths.dataDir,
    sinceWatermark: start.watermark,
    all,
    signal: opts.signal,
    configHash: rt.loaded.hash,
    gates: t.gates,
    // Offline GRPO replays completions as the policy's samples: only those the start weights served are.
    startWeights:
      algo === 'grpo' && settings.mode !== 'online' && t.grpo.on_policy
        ? { resourceId: start.resource?.id ?? null, dir: start.dir }
        : undefined,
  };
  const ds = role.context
    ? (
        await buildRoleDatasets(store, {
          ...common,
          context: role.context,
          only: [role.name],
          augment: trainAugment(rt, algo, opts.onStage, roleRecipe(role)),
        })
      )[0]!.result
    : await buildDataset(store, {
        ...common,
        algo,
        options: datasetOptionsFromConfig(t, rt.config.rewards),
        augment: trainAugment(rt, algo, opts.onStage),
      });
  if (ds.stats.rows === 0) throw emptyDataset(algo, ds, start, all);
  assertGates({ ...ds.stats, algo }, t.gates);
  const tag = own ? `-${role.name}${runTag}` : runTag;
  const runDir = path.join(rt.paths.dataDir, 'runs', `${algo}-${Date.now().toString(36)}-${process.pid}${tag}`);
  const outputDir = path.join(runDir, 'output');
  const config = trainerConfig(algo, {
    train: t,
    settings,
    modelPath: start.dir,
    outputDir,
    datasetPath: path.join(ds.dir, 'data.jsonl'),
    cpu,
    baseDir: rt.paths.baseDir,
  });
  const detail: TrainRunDetail = {
    algo,
    start: {
      ref: start.ref,
      line: start.line,
      dir: start.dir,
      adapter: start.adapter,
      base_dir: start.baseDir,
      resource_id: start.resource?.id ?? null,
      checkpoint_id: start.checkpoint?.id ?? null,
      watermark: start.watermark,
    },
    dataset: {
      dir: ds.dir,
      hash: ds.manifest.hash,
      rows: ds.stats.rows,
      watermark: { from: all ? 0 : start.watermark, to: ds.watermark },
      reused: ds.reused,
    },
    config_file: path.join(runDir, 'trainer.yaml'),
    config_hash: trainerConfigHash(config),
    output_dir: outputDir,
    log_file: path.join(runDir, 'trainer.log'),
    num_processes: t.num_processes,
    ...(t.num_machines > 1 ? { num_machines: t.num_machines } : {}),
    ...(own ? { role: role.name } : {}),
  };
  return { detail, config, resumed: false };
}

/** Where a role's run starts: its line's production weights, else its base model (the implicit role: or --from). */
export function roleStart(rt: Runtime, store: Store, role: RoleRun, from?: string): TrainStart {
  const weights = (ref: string, where?: string) => rt.weights(ref, where);
  const algo = role.recipe.algo;
  return role.line !== null
    ? resolveLineStart(store, { baseModel: role.baseModel, weights }, algo, role.line)
    : resolveStart(store, { baseModel: role.baseModel, weights }, algo, from);
}

async function resumeRun(store: Store, resume: true | string): Promise<PreparedRun> {
  const found = findResumable(store, resume === true ? undefined : resume);
  // A trainer whose parent was killed may still be running on the run's folder: it stops (saving) first.
  if (await stopLeftover(found.detail.trainer_pid, found.detail.trainer_host, os.hostname()))
    return resumeRun(store, found.run.id);
  const { run, detail, checkpoint } = found;
  for (const [what, p] of [
    ['dataset', detail.dataset.dir],
    ['start weights', detail.start.dir],
    ['trainer config', detail.config_file],
  ] as const) {
    if (!fs.existsSync(p)) throw new UserError(`cannot resume ${run.id}: its ${what} is gone (${p})`);
  }
  const config = { ...readTrainerConfig(detail.config_file), resume_from_checkpoint: checkpoint };
  const configFile = detail.config_file.replace(/(-resume-\d+)?\.yaml$/, `-resume-${Date.now()}.yaml`);
  return {
    detail: { ...detail, config_file: configFile, resumed_from: run.id, resume_checkpoint: checkpoint },
    config,
    resumed: true,
  };
}

/** Refuses a run that cannot fit on this machine: its memory (unless asked not to) and disk. */
export function checkRoom(
  rt: Runtime,
  { detail, config }: Pick<PreparedRun, 'detail' | 'config'>,
  devices: Devices,
  memory: boolean,
): void {
  const t = rt.config.train;
  const algo = detail.algo as Algo;
  if (t.check_memory && memory) {
    const needsRef = algo === 'dpo' || ((algo === 'grpo' || algo === 'ppo') && Number(config.beta) > 0);
    checkMemory(startOf(detail), algo, t.lora.enabled, needsRef, processesPerMachine(t, detail.num_processes), devices);
  }
  checkDisk(rt.paths.dataDir, startOf(detail), t.lora.enabled);
}

/**
 * The candidate a run produced: production with the new weights for the agents that serve the line (a role's
 * run: for the role's agents).
 */
function candidateSet(
  rt: Runtime,
  weight: Resource,
  agents: readonly string[] | undefined,
  origin: SetOrigin,
): ResourceSet | null {
  try {
    const production = syncProduction(rt);
    const members = agents
      ? withAgentWeights(production.members, agents, weight.id)
      : withWeights(production.members, rt.store(), weight, rt.config);
    return rt.store().sets.add(members, origin, production.id);
  } catch (err) {
    if (err instanceof UserError) return null;
    throw err;
  }
}

/** A role's sft or dpo recipe as the augment reads it (rows or chosen answers for its own hard tasks). */
function roleRecipe(role: RoleRun): { recipe: RLConfig['train']['sft']; key: string } {
  return { recipe: role.recipe as unknown as RLConfig['train']['sft'], key: `roles.${role.name}.recipe` };
}

/** train with the recipe's keys as train.<algo> (a recipe does not inherit that section's values). */
export function withRecipe(t: TrainConfig, recipe: RoleRun['recipe']): TrainConfig {
  const { algo, ...keys } = recipe;
  return { ...t, algo, [algo]: keys } as TrainConfig;
}

function startOf(detail: TrainRunDetail): TrainStart {
  const s = detail.start;
  return {
    ref: s.ref,
    line: s.line,
    dir: s.dir,
    adapter: s.adapter,
    baseDir: s.base_dir,
    resource: null,
    checkpoint: null,
    watermark: s.watermark,
  };
}

function emptyDataset(algo: Algo, ds: BuildDatasetResult, start: TrainStart, all: boolean): NotEnoughData {
  const completed = ds.stats.rollouts_by_status.completed ?? 0;
  const dropped = Object.entries(ds.stats.dropped)
    .map(([why, n]) => `${n} ${why}`)
    .join(', ');
  const since = all
    ? 'in the store'
    : `after rollout #${start.watermark} (where the last ${algo} run on ${start.line} stopped)`;
  return new NotEnoughData(
    `no ${algo} examples: ${completed} completed rollout(s) ${since} yield none${dropped ? ` (left out: ${dropped})` : ''}`,
    ds.stats.dropped.off_policy || ds.stats.dropped.unknown_weights
      ? `offline GRPO learns from completions the start weights (${start.ref}) served: collect with them, or set train.grpo.on_policy: false`
      : all
        ? 'collect traces first (`massgen-rl collect`), or check train.' + algo + ' filters'
        : 'collect new traces (`massgen-rl collect`), or pass --all (train.traces: all) to train on every stored trace',
  );
}
