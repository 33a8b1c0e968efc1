import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import type { DoctorReport } from '../../src/pipeline/utilities/doctor.js';
import { readModelManifest } from '../../src/resources/default-model.js';
import { runCli, tempDir } from '../helpers.js';

// These run on the real trainer venv and the converted default model, which `npm test`
// prepares first with `massgen-rl doctor --fix`.
describe('doctor on the real environment', () => {
  it('finds the pinned venv and the converted model, which answers; records it once as the production base', async () => {
    const dir = tempDir();
    for (let i = 0; i < 2; i++) {
      const fix = await runCli(['--json', 'doctor', '--fix'], { cwd: dir, env: process.env, timeoutMs: 300_000 });
      expect(fix.exitCode, fix.stderr).toBe(0);
      const report = JSON.parse(fix.stdout) as DoctorReport;
      const failed = report.checks.filter((c) => c.status === 'fail');
      expect(failed, 'run `massgen-rl doctor --fix` (npm test does) to prepare the environment').toEqual([]);
      // the model check asks the converted model a question: it generated text
      expect(report.checks.find((c) => c.id === 'model')).toMatchObject({
        status: 'ok',
        detail: expect.stringMatching(/^smollm2-135m-instruct .*answered "\S.*"\)$/),
      });
      // what this CPU supports (read by the trainer venv) and what training uses on it
      expect(report.checks.find((c) => c.id === 'cpu')).toMatchObject({
        status: 'info',
        detail: expect.stringMatching(/\d+ cores; AVX2 (yes|no), .*: training runs in (bf16|float32)/),
      });
      // the engine `serve` picks here, measured: llama.cpp, built by doctor --fix
      expect(report.checks.find((c) => c.id === 'engine')).toMatchObject({
        status: 'ok',
        detail: expect.stringMatching(/^llama\.cpp \(bf16, \d+ threads\): \d+(\.\d+)? tokens\/s, one stream, greedy$/),
      });
    }
    const manifest = readModelManifest(loadConfig({ cwd: dir }).paths.defaultModelDir)!;
    expect(manifest).toMatchObject({ name: 'smollm2-135m-instruct', eos_token: '<|im_end|>' });
    expect(manifest.pad_token).toBeTruthy();
    expect(manifest.pad_token).not.toBe(manifest.eos_token);

    const status = JSON.parse((await runCli(['--json', 'status'], { cwd: dir, env: process.env })).stdout) as {
      store: { counts: Record<string, number> };
      production: { kind: string; name: string; version: number; path: string }[];
    };
    expect(status.store.counts.resources).toBe(1);
    expect(status.production).toEqual([
      expect.objectContaining({ kind: 'weight', name: 'smollm2-135m-instruct', version: 1 }),
    ]);
    expect(status.store.counts.rollouts).toBe(0);
  }, 600_000);
});
