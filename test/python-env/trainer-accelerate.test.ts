import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runTrainer, trainerCommand } from '../../src/trainers/runner.js';
import { FIXTURES, tempDir } from '../helpers.js';

const FAKE_PY = path.join(FIXTURES, 'trainers', 'fake_trainer.py');
const VENV_PYTHON = path.join(
  process.env.MASSGEN_RL_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'massgen-rl'),
  'venv',
  'bin',
  'python',
);

describe.skipIf(!fs.existsSync(VENV_PYTHON))('runTrainer through accelerate', () => {
  it('launches a module with accelerate.commands.launch and passes --config through to it', async () => {
    const dir = tempDir({
      'pkgfake/__init__.py': '',
      'pkgfake/train.py':
        'import json, sys\nprint(json.dumps({"event": "done", "path": sys.argv[2], "metrics": {"argv": sys.argv[1:]}}))\n',
      'accelerate.yaml':
        "compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\nnum_processes: 1\nuse_cpu: true\nmixed_precision: 'no'\n",
    });
    const { command, args } = trainerCommand({
      python: VENV_PYTHON,
      module: 'pkgfake.train',
      configFile: '/x/trainer.yaml',
      numProcesses: 1,
      accelerateConfig: path.join(dir, 'accelerate.yaml'),
    });
    expect(args.slice(0, 2)).toEqual(['-m', 'accelerate.commands.launch']);
    const o = await runTrainer({
      command,
      args,
      env: { PYTHONPATH: dir, CUDA_VISIBLE_DEVICES: '' },
      cwd: dir,
      logFile: path.join(dir, 'log'),
    });
    expect(o.status).toBe('completed');
    expect(o.done).toMatchObject({ path: '/x/trainer.yaml', metrics: { argv: ['--config', '/x/trainer.yaml'] } });
  }, 120_000);

  it("Ctrl-C through accelerate's launcher: the trainer still saves its checkpoint, though the launcher exits first", async () => {
    const dir = tempDir({
      'accelerate.yaml':
        "compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\nnum_processes: 1\nuse_cpu: true\nmixed_precision: 'no'\n",
    });
    const configFile = path.join(dir, 'trainer.yaml');
    fs.writeFileSync(
      configFile,
      JSON.stringify({ output_dir: path.join(dir, 'out'), max_steps: 100_000, step_seconds: 0.05, save_seconds: 4 }),
    );
    const { command, args } = trainerCommand({
      python: VENV_PYTHON,
      script: FAKE_PY,
      configFile,
      accelerateConfig: path.join(dir, 'accelerate.yaml'),
    });
    const controller = new AbortController();
    const o = await runTrainer({
      command,
      args,
      env: { CUDA_VISIBLE_DEVICES: '' },
      logFile: path.join(dir, 'log'),
      signal: controller.signal,
      onEvent: (e) => {
        if (e.event === 'step' && e.step === 3) controller.abort();
      },
    });
    expect(o.status).toBe('interrupted');
    expect(o.signalsSent).toEqual(['SIGINT']); // one signal: a second one would make a real trainer stop without saving
    expect(o.lastCheckpoint?.path).toMatch(/out\/checkpoint-\d+$/);
    expect(o.error).toBeUndefined();
    const log = fs.readFileSync(path.join(dir, 'log'), 'utf8');
    expect(log).toContain('interrupted: saving a resumable checkpoint');
    expect(log).toContain('KeyboardInterrupt'); // the launcher gave up waiting after 0.25 s; the trainer went on saving
  }, 120_000);
});
