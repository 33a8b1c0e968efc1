import { ALGOS } from '../config/schema.js';
import { InterruptedError, UserError } from '../errors.js';
import type { Store } from '../store/index.js';
import { emitAugmented, type Augment } from './augment.js';
import { dpoBuilder } from './dpo.js';
import { checkGates, type GateResult, type GateThresholds } from './gates.js';
import { grpoBuilder } from './grpo.js';
import { policyCheck, type StartWeights } from './on-policy.js';
import { resolveDatasetOptions, type DatasetOptionsInput } from './options.js';
import { ppoBuilder } from './ppo.js';
import { TraceReader, type TraceRecord } from './read-traces.js';
import { RolloutIndex } from './rollout-index.js';
import { sftBuilder } from './sft.js';
import { StatsCollector, type DatasetStats } from './stats.js';
import { suiteShareSink } from './suite-share.js';
import type { Algo, BuilderContext, DatasetBuilder, RowSink } from './types.js';
import { datasetsDir, DatasetWriter, type DatasetManifest } from './writer.js';

export const BUILDERS: Record<Algo, (ctx: BuilderContext) => DatasetBuilder> = {
  sft: sftBuilder,
  grpo: grpoBuilder,
  dpo: dpoBuilder,
  ppo: ppoBuilder,
};

/** DPO needs no prompt spans (at most one, for a task without a row): it reads coordination spans only. */
const COORDINATION_ONLY: Record<Algo, boolean> = { sft: false, grpo: false, dpo: true, ppo: false };

export interface BuildDatasetInput {
  algo: Algo;
  /** The project data dir: datasets go to <dataDir>/datasets/<algo>-<hash12>/. */
  dataDir: string;
  /** Use rollouts with num > this (the watermark of the previous build); ignored with `all`. */
  sinceWatermark?: number | null;
  all?: boolean;
  options?: DatasetOptionsInput;
  configHash?: string | null;
  /** When given, the gates are checked and recorded in the manifest (nothing is thrown: see assertGates). */
  gates?: GateThresholds;
  /** Offline GRPO: keep only completions served by these weights (the run's start). */
  startWeights?: StartWeights;
  /** Answers asked for the hard tasks once the traces are read (train.sft / train.dpo rationalize, sft teacher). */
  augment?: Augment;
  /** Each rollout as the builder sees it (a role's view: roles.ts); absent: as stored. */
  transform?: (record: TraceRecord) => TraceRecord;
  /** Rollouts per read page. */
  pageSize?: number;
  signal?: AbortSignal;
  onProgress?: (p: { rollouts: number; rows: number; watermark: number }) => void;
}

export interface BuildDatasetResult {
  dir: string;
  /** The manifest on disk (that of the earlier build when the directory was reused). */
  manifest: DatasetManifest;
  /** This build's figures. */
  stats: DatasetStats;
  /** The new watermark: the largest rollout num read (the start one when nothing new was read). */
  watermark: number;
  /** The same content had been written before: its directory was kept as it was. */
  reused: boolean;
  gates: GateResult | null;
}

/**
 * Builds one dataset from the store: streams rollouts (num > watermark, oldest first, stopping before
 * the first one still running), feeds the completed ones to the algorithm's builder, writes the rows
 * as JSONL with a manifest per docs/trainer-protocol.md (content-hashed directory, written atomically).
 */
export async function buildDataset(store: Store, input: BuildDatasetInput): Promise<BuildDatasetResult> {
  if (!(ALGOS as readonly string[]).includes(input.algo))
    throw new UserError(`unknown dataset algorithm "${input.algo}" (one of ${ALGOS.join(', ')})`);
  const options = resolveDatasetOptions(input.options);
  const from = input.all ? 0 : Math.max(0, input.sinceWatermark ?? 0);
  const reader = new TraceReader(store, from, input.pageSize, COORDINATION_ONLY[input.algo]);
  const load = COORDINATION_ONLY[input.algo]
    ? (rolloutId: string, seq: number) => reader.span(rolloutId, seq)?.payload
    : undefined;
  const stats = new StatsCollector();
  const policy = input.startWeights ? policyCheck(store, input.startWeights) : undefined;
  const builder = BUILDERS[input.algo]({ options, stats, reader, policy });
  const writer = new DatasetWriter(datasetsDir(input.dataDir), input.algo);
  try {
    const write: RowSink = (row, info) => {
      writer.write(row);
      stats.row(info);
    };
    const share =
      input.algo === 'dpo' && options.dpo.max_suite_share < 1
        ? suiteShareSink(options.dpo.max_suite_share, stats, write)
        : null;
    const emit = share?.emit ?? write;
    for (const page of reader.pages()) {
      for (const stored of page) {
        const record = input.transform ? input.transform(stored) : stored;
        stats.status(record.rollout.status);
        if (record.rollout.status === 'completed')
          builder.add(new RolloutIndex(record, options.weights, load, options.verifying), emit);
      }
      input.onProgress?.({ rollouts: reader.rolloutsScanned, rows: stats.rows, watermark: reader.watermark });
      // Let timers and signals run between pages (a large build takes seconds).
      await new Promise((resolve) => setImmediate(resolve));
      if (input.signal?.aborted) throw new InterruptedError('dataset build interrupted');
    }
    if (input.augment && builder.hardTasks) {
      const hard = builder.hardTasks();
      stats.count('hard_tasks', hard.length);
      const rows = hard.length ? await input.augment(hard, stats, input.signal) : [];
      if (builder.augmented) builder.augmented(rows);
      else emitAugmented(rows, options.sft.max_per_task, emit, stats);
    }
    builder.finish(emit);
    share?.flush();
    const watermark = { from, to: reader.watermark };
    const snapshot = stats.snapshot(input.algo, watermark, reader.spansRead);
    const gates = input.gates ? checkGates({ ...snapshot }, input.gates) : null;
    const { dir, manifest, reused } = writer.commit({
      watermark,
      rollouts: snapshot.rollouts_used,
      config_hash: input.configHash ?? null,
      stats: snapshot,
      gates,
    });
    return { dir, manifest, stats: snapshot, watermark: reader.watermark, reused, gates };
  } catch (err) {
    writer.discard();
    throw err;
  }
}
