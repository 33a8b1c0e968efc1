import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { GateError, InterruptedError, UserError } from '../../src/errors.js';
import { collect } from '../../src/pipeline/collect/collect.js';
import { train } from '../../src/pipeline/train/train.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { openStore } from '../../src/runtime/store.js';
import { FIXTURES } from '../helpers.js';
import type { ScriptedServer } from '../support/scripted-server.js';
import { teamCollect } from '../support/team-collect.js';

// The train pipeline end to end with a stand-in trainer script (train.script), run by the real trainer
// venv's Python: dataset, trainer config, protocol, metrics, registration, resume, failures.
const TRAINER = path.join(FIXTURES, 'trainers', 'protocol_trainer.py');
const TRAIN_YAML = `train:
  base_model: ./base
  script: ${TRAINER}
  save_steps: 1
  gates: { min_examples: 2, min_clean_share: 0, min_categories: 1 }
`;
const BASE = { 'base/config.json': '{"model_type": "llama"}', 'base/model.safetensors': 'x'.repeat(1024) };

let server: ScriptedServer | undefined;
let record: string;
afterEach(async () => {
  await server?.close();
  server = undefined;
  delete process.env.FAKE_TRAINER_MODE;
});

async function project(extra = ''): Promise<LoadedConfig> {
  const team = await teamCollect(`${TRAIN_YAML}${extra}`, BASE);
  server = team.server;
  record = path.join(team.dir, 'trainer-configs.jsonl');
  process.env.FAKE_TRAINER_RECORD = record;
  return team.loaded;
}

const configs = () =>
  fs
    .readFileSync(record, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('train on a machine other than 0', () => {
  it('is refused by the train stage (the loop runs on machine 0; `massgen-rl train` runs this one as a worker)', async () => {
    const loaded = await project(
      '  num_machines: 2\n  num_processes: 2\n  machine_rank: 1\n  main_process_ip: 127.0.0.1\n',
    );
    await expect(withRuntime(loaded, (rt) => train(rt, { algo: 'sft' }))).rejects.toThrow(
      /machine 1 of 2 only trains along with machine 0, which records the run/,
    );
    await expect(withRuntime(loaded, (rt) => train(rt, { algo: 'sft', machineRank: 2 }))).rejects.toThrow(
      /--machine-rank 2: rank 2 is out of range/,
    );
    const store = openStore(loaded);
    expect(store.trainingRuns.latest(5)).toEqual([]);
    store.close();
  });
});

describe('train with a protocol trainer script', () => {
  beforeAll(() => {
    expect(fs.existsSync(TRAINER)).toBe(true);
  });

  it('builds the dataset, runs the trainer, streams metrics and registers the checkpoint with lineage', async () => {
    const loaded = await project();
    const stages: string[] = [];
    const steps: number[] = [];
    const r = await withRuntime(loaded, (rt) =>
      train(rt, { algo: 'sft', maxSteps: 4, onStage: (m) => stages.push(m), onProgress: (p) => steps.push(p.step) }),
    );
    expect(steps).toEqual([1, 2, 3, 4]);
    expect(stages.some((s) => s.includes('training on'))).toBe(true);
    expect(r).toMatchObject({
      algo: 'sft',
      steps: 4,
      weight: { name: 'base', version: 1, adapter: true },
      dataset: { watermark: { from: 0, to: 3 } },
    });
    const [cfg] = configs();
    expect(cfg).toMatchObject({
      model_path: path.join(loaded.paths.baseDir, 'base'),
      max_steps: 4,
      use_cpu: true,
      bf16: null, // the trainer's: bf16 where the CPU computes it natively
      save_steps: 1,
      lora: { r: 16, alpha: 32 },
    });
    expect(cfg!.dataset_path).toBe(path.join(r.dataset.dir, 'data.jsonl'));

    const store = openStore(loaded);
    try {
      const ck = store.checkpoints.get(r.checkpoint.id)!;
      expect(ck).toMatchObject({
        algo: 'sft',
        trainingRunId: r.runId,
        datasetHash: r.dataset.hash,
        watermark: 3,
        baseModel: './base',
        parentId: null,
      });
      expect(ck.configHash).toMatch(/^[0-9a-f]{16}$/);
      expect(ck.metrics).toMatchObject({ train_loss: 0.25, final_loss: 0.25, steps: 4 });
      expect(ck.path).toBe(path.join(r.logFile, '..', 'output', 'final'));
      const resource = store.resources.get(ck.resourceId!)!;
      expect(resource.metadata).toMatchObject({
        adapter: true,
        base_path: path.join(loaded.paths.baseDir, 'base'),
        algo: 'sft',
      });
      expect(store.trainingRuns.get(r.runId)).toMatchObject({ status: 'completed' });
      expect(store.trainingMetrics.list(r.runId).map((m) => m.step)).toEqual([1, 2, 3, 4]);
      expect(store.trainingMetrics.last(r.runId)!.metrics).toMatchObject({ loss: 0.25, total_steps: 4 });
    } finally {
      store.close();
    }
    expect(fs.readFileSync(r.logFile, 'utf8')).toContain('# completed: exit code 0');

    // Incremental: nothing new since the last sft run on this line; --all trains again, a new collect too.
    await expect(withRuntime(loaded, (rt) => train(rt, { algo: 'sft', maxSteps: 1 }))).rejects.toThrow(
      /no sft examples: 0 completed rollout\(s\) after rollout #3 \(where the last sft run on base stopped\)/,
    );
    const again = await withRuntime(loaded, (rt) => train(rt, { algo: 'sft', maxSteps: 1, all: true }));
    expect(again.weight).toMatchObject({ name: 'base', version: 2 });
    await withRuntime(loaded, (rt) => collect(rt, { n: 2 }));
    const next = await withRuntime(loaded, (rt) => train(rt, { algo: 'sft', maxSteps: 1 }));
    expect(next.dataset.watermark).toEqual({ from: 3, to: 5 });
    // train.traces: all replays every stored trace on every run, as --all does for one.
    const replay = {
      ...loaded,
      config: { ...loaded.config, train: { ...loaded.config.train, traces: 'all' as const } },
    };
    const replayed = await withRuntime(replay, (rt) => train(rt, { algo: 'sft', maxSteps: 1 }));
    expect(replayed.dataset.watermark).toEqual({ from: 0, to: 5 });

    // Continuing from a checkpoint makes it the parent; the adapter keeps the base model folder.
    const child = await withRuntime(loaded, (rt) => train(rt, { algo: 'dpo', maxSteps: 1, from: next.checkpoint.id }));
    expect(child.start).toMatchObject({ checkpoint_id: next.checkpoint.id, dir: next.weight.path, adapter: true });
    expect(child.checkpoint.parentId).toBe(next.checkpoint.id);
    expect(configs().at(-1)).toMatchObject({ model_path: next.weight.path, beta: 0.1 });
  }, 120_000);

  it('online grpo: the trainer scores its samples through the reward bridge, which is gone after the run', async () => {
    const loaded = await project('  grpo: { mode: online, num_generations: 2 }\n');
    const r = await withRuntime(loaded, (rt) => train(rt, { algo: 'grpo', maxSteps: 2 }));
    const url = configs()[0]!.reward_url as string;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/rewards$/);
    const store = openStore(loaded);
    try {
      // ANSWER: 42 scores exact 1 + numeric 1, ANSWER: 7 scores 0: the mean is 1.
      expect(store.trainingMetrics.list(r.runId).map((m) => m.metrics.reward)).toEqual([1, 1]);
    } finally {
      store.close();
    }
    await expect(fetch(url, { method: 'POST', body: '{}' })).rejects.toThrow();
  }, 120_000);

  it('offline grpo learns only from completions the start weights served (train.grpo.on_policy)', async () => {
    // The stub team's models are served elsewhere: no weight resource says they are ./base.
    const loaded = await project();
    const refused = withRuntime(loaded, (rt) => train(rt, { algo: 'grpo', maxSteps: 1 }));
    await expect(refused).rejects.toThrow(
      /no grpo examples: 3 completed rollout\(s\) .* yield none \(left out: \d+ unknown_weights\)/,
    );
    await expect(refused).rejects.toMatchObject({
      hint: 'offline GRPO learns from completions the start weights (./base) served: collect with them, or set train.grpo.on_policy: false',
    });
    await server?.close();
    const anyWeights = await project('  grpo: { on_policy: false }\n');
    const r = await withRuntime(anyWeights, (rt) => train(rt, { algo: 'grpo', maxSteps: 1 }));
    expect(r.dataset.rows).toBeGreaterThan(0);
  }, 120_000);

  it('stops cleanly on abort, records the run as cancelled, and --resume continues from its checkpoint', async () => {
    const loaded = await project();
    process.env.FAKE_TRAINER_MODE = 'sigint';
    const controller = new AbortController();
    const run = withRuntime(loaded, (rt) =>
      train(rt, {
        algo: 'ppo',
        maxSteps: 50,
        signal: controller.signal,
        onProgress: (p) => p.step === 3 && controller.abort(),
      }),
    );
    await expect(run).rejects.toThrow(InterruptedError);
    await expect(run).rejects.toThrow(/training stopped at step 3 .*massgen-rl train --resume tr_/);
    const store = openStore(loaded);
    const stopped = store.trainingRuns.latest(1)[0]!;
    expect(stopped.status).toBe('cancelled');
    expect(store.checkpoints.list()).toEqual([]);
    store.close();

    delete process.env.FAKE_TRAINER_MODE;
    const resumed = await withRuntime(loaded, (rt) => train(rt, { resume: true }));
    expect(resumed).toMatchObject({ resumedFrom: stopped.id, algo: 'ppo', steps: 47 });
    expect(configs().at(-1)).toMatchObject({
      resume_from_checkpoint: expect.stringMatching(/output\/checkpoint-3$/),
      max_steps: 50,
    });
    const s2 = openStore(loaded);
    try {
      expect(s2.checkpoints.get(resumed.checkpoint.id)).toMatchObject({ algo: 'ppo', watermark: 3 });
      expect(s2.trainingMetrics.list(resumed.runId)[0]!.step).toBe(4);
    } finally {
      s2.close();
    }
    await expect(withRuntime(loaded, (rt) => train(rt, { resume: true }))).rejects.toThrow(
      /no stopped training run with a checkpoint to resume/,
    );
    await expect(withRuntime(loaded, (rt) => train(rt, { resume: stopped.id }))).rejects.toThrow(
      /already resumed and completed/,
    );
  }, 120_000);

  it('refuses bad input with clear messages and registers nothing half-way', async () => {
    const loaded = await project();
    await expect(withRuntime(loaded, (rt) => train(rt, { algo: 'reinforce' }))).rejects.toThrow(
      /unknown algorithm "reinforce"; choose one of grpo, sft, dpo, ppo/,
    );
    const strict = loadConfig({ cwd: loaded.paths.baseDir, overrides: ['train.gates.min_examples=500'] });
    const gate = withRuntime(strict, (rt) => train(rt, { algo: 'dpo' }));
    await expect(gate).rejects.toThrow(GateError);
    await expect(gate).rejects.toThrow(/dpo dataset failed 1 quality gate: 3 examples \(need ≥ 500\)/);
    process.env.FAKE_TRAINER_MODE = 'crash';
    const crash = withRuntime(loaded, (rt) => train(rt, { algo: 'sft' }));
    await expect(crash).rejects.toThrow(UserError);
    await expect(crash).rejects.toThrow(
      /the sft trainer failed: Traceback[\s\S]*RuntimeError: pretend the trainer crashed/,
    );
    process.env.FAKE_TRAINER_MODE = 'error';
    await expect(withRuntime(loaded, (rt) => train(rt, { algo: 'sft' }))).rejects.toThrow(
      /the sft trainer failed: out of memory \(pretend\)/,
    );
    const noVenv = loadConfig({ cwd: loaded.paths.baseDir, overrides: ['train.venv=./no-venv'] });
    await expect(withRuntime(noVenv, (rt) => train(rt, { algo: 'sft' }))).rejects.toThrow(
      /trainer virtualenv is missing: no virtualenv at .*no-venv/,
    );
    const store = openStore(loaded);
    try {
      expect(store.checkpoints.list()).toEqual([]);
      expect(store.resources.list('weight')).toEqual([]);
      expect(store.trainingRuns.latest(10).map((r) => r.status)).toEqual(['failed', 'failed']);
      expect(store.trainingRuns.latest(1)[0]!.error).toBe('out of memory (pretend)');
    } finally {
      store.close();
    }
  }, 120_000);
});
