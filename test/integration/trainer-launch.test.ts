import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { pythonEnv } from '../../src/python/module.js';
import { launchCommand } from '../../src/trainers/launch.js';
import { gpuEnv, runTrainer, trainerCommand, type TrainerEvent } from '../../src/trainers/runner.js';
import { FIXTURES, tempDir } from '../helpers.js';

const FAKE_PY = path.join(FIXTURES, 'trainers', 'fake_trainer.py');
const hasPython3 = (await execa('python3', ['--version'], { reject: false })).exitCode === 0;

// The pure command building is in test/unit/trainer-runner-command.test.ts; here it meets a port and a process.
describe('launchCommand', () => {
  it("a fixed port over several machines (train.main_process_port, else accelerate's 29500), a free one on one machine", async () => {
    const base = loadConfig({
      cwd: tempDir(),
      overrides: ['train.num_processes=4', 'train.num_machines=2', 'train.main_process_ip=node0.cluster'],
    }).config.train;
    const input = {
      python: 'py',
      algo: 'sft' as const,
      configFile: 'c.yaml',
      cpu: false,
      baseDir: '/p',
      numProcesses: 4,
    };
    const args = async (train: typeof base, machineRank?: number) =>
      (await launchCommand({ ...input, train, machineRank })).args;
    expect(await args(base)).toEqual([
      '-m',
      'accelerate.commands.launch',
      '--main_process_port',
      '29500',
      '--num_processes',
      '4',
      '--multi_gpu',
      '--num_machines',
      '2',
      '--machine_rank',
      '0',
      '--main_process_ip',
      'node0.cluster',
      '-m',
      'massgen_rl_training.sft',
      '--config',
      'c.yaml',
    ]);
    const worker = await args({ ...base, main_process_port: 31000, accelerate_config: 'z3.yaml' }, 1);
    expect(worker.join(' ')).toBe(
      `-m accelerate.commands.launch --main_process_port 31000 --num_processes 4 --config_file ${path.resolve('/p', 'z3.yaml')} --num_machines 2 --machine_rank 1 --main_process_ip node0.cluster -m massgen_rl_training.sft --config c.yaml`,
    );
    const one = { ...base, num_machines: 1, num_processes: 2, main_process_ip: undefined };
    const free = await args(one);
    expect(free.slice(0, 3)).toEqual(['-m', 'accelerate.commands.launch', '--main_process_port']);
    expect(Number(free[3])).toBeGreaterThan(0);
    expect(free).not.toContain('--num_machines');
    expect((await args({ ...one, main_process_port: 31001 })).slice(2, 4)).toEqual(['--main_process_port', '31001']);
  });
});

describe.skipIf(!hasPython3)('runTrainer with a Python trainer script', () => {
  it('runs a script through trainerCommand, and Ctrl-C makes it save a checkpoint and exit 130', async () => {
    const dir = tempDir();
    const configFile = path.join(dir, 'trainer.yaml');
    fs.writeFileSync(configFile, JSON.stringify({ output_dir: path.join(dir, 'out'), max_steps: 3 }));
    const { command, args } = trainerCommand({ python: 'python3', script: FAKE_PY, configFile });
    const done = await runTrainer({ command, args, env: pythonEnv(gpuEnv('none')), logFile: path.join(dir, 'a.log') });
    expect(done).toMatchObject({
      status: 'completed',
      exitCode: 0,
      stepCount: 3,
      done: { path: path.join(dir, 'out', 'final'), adapter: false },
    });
    expect(fs.readFileSync(path.join(dir, 'a.log'), 'utf8')).toContain(`training into ${path.join(dir, 'out')}`);

    fs.writeFileSync(
      configFile,
      JSON.stringify({ output_dir: path.join(dir, 'out'), max_steps: 100_000, step_seconds: 0.02 }),
    );
    const controller = new AbortController();
    const events: TrainerEvent[] = [];
    const run = runTrainer({
      command,
      args,
      logFile: path.join(dir, 'b.log'),
      signal: controller.signal,
      onEvent: (e) => {
        events.push(e);
        if (e.event === 'step' && e.step === 3) controller.abort();
      },
    });
    const o = await run;
    expect(o).toMatchObject({ status: 'interrupted', exitCode: 130, signalsSent: ['SIGINT'] });
    expect(o.lastCheckpoint?.path).toMatch(/out\/checkpoint-\d+$/);
    expect(events.at(-1)?.event).toBe('checkpoint');
  });
});
