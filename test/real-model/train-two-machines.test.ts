import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LoadedConfig } from '../../src/config/load.js';
import { openStore } from '../../src/runtime/store.js';
import { storeDb } from '../../src/store/store.js';
import { runCli, tempDir } from '../helpers.js';
import { freePort } from '../support/free-port.js';
import type { ScriptedServer } from '../support/scripted-server.js';
import { teamCollect } from '../support/team-collect.js';

// Two "machines" on loopback: two project folders (machine 1's a copy of machine 0's, store included), one config
// file, two `massgen-rl train` processes (the second with --machine-rank 1), each starting its own `accelerate
// launch` with one CPU process; a real SFT run on the default model, trained by both as one process group.
const YAML = (port: number) => `train:
  gpus: none
  num_processes: 2
  num_machines: 2
  main_process_ip: 127.0.0.1
  main_process_port: ${port}
  batch_size: 1
  max_length: 512
  save_steps: 0
  learning_rate: 0.0001
  lora: { r: 4, alpha: 8 }
  sft: { reward_threshold: null }
  grpo: { num_generations: 2 }
  gates: { min_examples: 2, min_clean_share: 0, min_categories: 1 }
`;

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function storeCounts(loaded: LoadedConfig, dir: string): { runs: number; checkpoints: number; weights: number } {
  const store = openStore({
    ...loaded,
    paths: { ...loaded.paths, storePath: path.join(dir, '.massgen-rl', 'store.sqlite') },
  });
  try {
    const count = (sql: string) => storeDb(store).prepare(sql).pluck().get() as number;
    return {
      runs: count('SELECT COUNT(*) FROM training_runs'),
      checkpoints: count('SELECT COUNT(*) FROM checkpoints'),
      weights: count("SELECT COUNT(*) FROM resources WHERE kind = 'weight'"),
    };
  } finally {
    store.close();
  }
}

const haveModel = (loaded: LoadedConfig) =>
  fs.existsSync(path.join(loaded.paths.defaultModelDir, 'config.json'))
  && fs.existsSync(path.join(loaded.paths.venvDir, 'bin', 'python'));

describe('massgen-rl train on two machines', () => {
  it('machine 0 records one run trained by both; machine 1 trains along, records nothing and exits with its success', async (ctx) => {
    const t = await teamCollect(YAML(await freePort()));
    server = t.server;
    if (!haveModel(t.loaded)) return ctx.skip();
    const machine1 = tempDir();
    fs.cpSync(t.dir, machine1, { recursive: true });
    const before = storeCounts(t.loaded, machine1);

    const [worker, main] = await Promise.all([
      runCli(['train', '--algo', 'sft', '--max-steps', '2', '--machine-rank', '1', '--json'], {
        cwd: machine1,
        timeoutMs: 300_000,
      }),
      runCli(['train', '--algo', 'sft', '--max-steps', '2', '--json'], { cwd: t.dir, timeoutMs: 300_000 }),
    ]);
    expect(main.exitCode, main.stderr).toBe(0);
    expect(worker.exitCode, worker.stderr).toBe(0);
    const m = JSON.parse(main.stdout);
    const w = JSON.parse(worker.stdout);
    expect(m).toMatchObject({ algo: 'sft', steps: 2, metrics: { processes: 2, machines: 2 } });
    expect(w).toMatchObject({
      machineRank: 1,
      numMachines: 2,
      processes: 1,
      algo: 'sft',
      dataset: { hash: m.dataset.hash, rows: m.dataset.rows },
    });

    // machine 0's store: the run (over 2 machines), its metrics, its checkpoint; machine 1's store: unchanged
    expect(storeCounts(t.loaded, t.dir)).toEqual({ runs: 1, checkpoints: 1, weights: before.weights + 1 });
    expect(storeCounts(t.loaded, machine1)).toEqual(before);
    const store = openStore(t.loaded);
    const mainSteps = store.trainingMetrics
      .list(m.runId)
      .map((s) => ({ step: s.step, grad_norm: (s.metrics.metrics as Record<string, number>).grad_norm }));
    expect(store.trainingRuns.get(m.runId)!.detail).toMatchObject({ num_processes: 2, num_machines: 2 });
    store.close();
    expect(fs.readFileSync(m.logFile, 'utf8')).toMatch(
      /--num_processes 2 --config_file \S+cpu-2proc\.yaml --num_machines 2 --machine_rank 0 --main_process_ip 127\.0\.0\.1/,
    );

    // machine 1 took the same steps with the same all-reduced gradient (its first process logs its steps)
    const log = fs.readFileSync(w.logFile, 'utf8');
    expect(log).toMatch(/--machine_rank 1 --main_process_ip 127\.0\.0\.1/);
    const workerSteps = log
      .split('\n')
      .filter((l) => l.startsWith('[machine 1] {"event": "step"'))
      .map((l) => JSON.parse(l.slice('[machine 1] '.length)));
    expect(workerSteps.map((s) => s.step)).toEqual([1, 2]);
    expect(mainSteps.map((s) => s.step)).toEqual([1, 2]);
    workerSteps.forEach((s, i) => expect(s.metrics.grad_norm).toBeCloseTo(mainSteps[i]!.grad_norm, 6));
    expect(fs.existsSync(path.join(path.dirname(w.logFile), 'output', 'final'))).toBe(false);
  }, 360_000);
});
