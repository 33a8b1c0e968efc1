import { execa } from 'execa';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.js';
import { pythonEnv } from '../../src/python/module.js';
import { gpuEnv, parseTrainerEvent, runTrainer, stepMetrics, trainerCommand, type TrainerEvent } from '../../src/trainers/runner.js';
import { launchCommand } from '../../src/trainers/launch.js';
import { loadConfig } from '../../src/config/load.js';
import { FIXTURES, tempDir } from '../helpers.js';

const FAKE_PY = path.join(FIXTURES, 'trainers', 'fake_trainer.py');
const VENV_PYTHON = path.join(process.env.MASSGEN_RL_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'massgen-rl'), 'venv', 'bin', 'python');
const hasPython3 = (await execa('python3', ['--version'], { reject: false })).exitCode === 0;

describe('trainerCommand', () => {
  it('runs a bundled trainer as a module, a user script directly, and several processes through accelerate', () => {
    expect(trainerCommand({ python: 'py', module: 'grpo', configFile: 'c.yaml' })).toEqual({ command: 'py', args: ['-m', 'massgen_rl_trainers.train.grpo', '--config', 'c.yaml'] });
    expect(trainerCommand({ python: 'py', module: 'pkg.train', configFile: 'c.yaml' }).args).toEqual(['-m', 'pkg.train', '--config', 'c.yaml']);
    expect(trainerCommand({ python: 'py', script: '/s/train.py', configFile: 'c.yaml', numProcesses: 1 }).args).toEqual(['/s/train.py', '--config', 'c.yaml']);
    expect(trainerCommand({ python: 'py', module: 'sft', configFile: 'c.yaml', numProcesses: 2 }).args).toEqual([
      '-m', 'accelerate.commands.launch', '--num_processes', '2', '-m', 'massgen_rl_trainers.train.sft', '--config', 'c.yaml',
    ]);
    expect(trainerCommand({ python: 'py', script: 't.py', configFile: 'c.yaml', numProcesses: 4, accelerateConfig: 'ds.yaml', cpu: true }).args).toEqual([
      '-m', 'accelerate.commands.launch', '--num_processes', '4', '--config_file', 'ds.yaml', '--cpu', 't.py', '--config', 'c.yaml',
    ]);
    expect(() => trainerCommand({ python: 'py', module: 'sft', configFile: 'c', numProcesses: 0 })).toThrow(UserError);
    expect(() => trainerCommand({ python: 'py', configFile: 'c' })).toThrow(/exactly one of module or script/);
  });

  it('over several machines: the total process count, this machine\'s rank and where machine 0 listens', () => {
    const machines = { count: 2, rank: 1, mainIp: '10.0.0.1' };
    expect(trainerCommand({ python: 'py', module: 'sft', configFile: 'c.yaml', numProcesses: 4, accelerateConfig: 'z2.yaml', mainProcessPort: 29600, machines }).args).toEqual([
      '-m', 'accelerate.commands.launch', '--main_process_port', '29600', '--num_processes', '4', '--config_file', 'z2.yaml',
      '--num_machines', '2', '--machine_rank', '1', '--main_process_ip', '10.0.0.1', '-m', 'massgen_rl_trainers.train.sft', '--config', 'c.yaml',
    ]);
    // without a config file accelerate would start a lone process on a machine with one GPU: torchrun is asked for
    expect(trainerCommand({ python: 'py', module: 'sft', configFile: 'c.yaml', numProcesses: 2, machines }).args).toEqual([
      '-m', 'accelerate.commands.launch', '--num_processes', '2', '--multi_gpu', '--num_machines', '2', '--machine_rank', '1', '--main_process_ip', '10.0.0.1',
      '-m', 'massgen_rl_trainers.train.sft', '--config', 'c.yaml',
    ]);
    expect(trainerCommand({ python: 'py', module: 'sft', configFile: 'c.yaml', numProcesses: 2, machines: { ...machines, count: 1, rank: 0 } }).args).not.toContain('--num_machines');
    expect(() => trainerCommand({ python: 'py', module: 'sft', configFile: 'c', numProcesses: 3, machines })).toThrow(/3 processes, machine 1 of 2/);
  });

  it('launchCommand: a fixed port over several machines (train.main_process_port, else accelerate\'s 29500), a free one on one machine', async () => {
    const base = loadConfig({ cwd: tempDir(), overrides: ['train.num_processes=4', 'train.num_machines=2', 'train.main_process_ip=node0.cluster'] }).config.train;
    const input = { python: 'py', algo: 'sft' as const, configFile: 'c.yaml', cpu: false, baseDir: '/p', numProcesses: 4 };
    const args = async (train: typeof base, machineRank?: number) => (await launchCommand({ ...input, train, machineRank })).args;
    expect(await args(base)).toEqual(['-m', 'accelerate.commands.launch', '--main_process_port', '29500', '--num_processes', '4', '--multi_gpu',
      '--num_machines', '2', '--machine_rank', '0', '--main_process_ip', 'node0.cluster', '-m', 'massgen_rl_trainers.train.sft', '--config', 'c.yaml']);
    const worker = await args({ ...base, main_process_port: 31000, accelerate_config: 'z3.yaml' }, 1);
    expect(worker.join(' ')).toBe(`-m accelerate.commands.launch --main_process_port 31000 --num_processes 4 --config_file ${path.resolve('/p', 'z3.yaml')} --num_machines 2 --machine_rank 1 --main_process_ip node0.cluster -m massgen_rl_trainers.train.sft --config c.yaml`);
    const one = { ...base, num_machines: 1, num_processes: 2, main_process_ip: undefined };
    const free = await args(one);
    expect(free.slice(0, 3)).toEqual(['-m', 'accelerate.commands.launch', '--main_process_port']);
    expect(Number(free[3])).toBeGreaterThan(0);
    expect(free).not.toContain('--num_machines');
    expect((await args({ ...one, main_process_port: 31001 })).slice(2, 4)).toEqual(['--main_process_port', '31001']);
  });

  it('maps train.gpus to CUDA_VISIBLE_DEVICES', () => {
    expect(gpuEnv('auto')).toEqual({});
    expect(gpuEnv('none')).toEqual({ CUDA_VISIBLE_DEVICES: '' });
    expect(gpuEnv('0,1')).toEqual({ CUDA_VISIBLE_DEVICES: '0,1' });
    expect(gpuEnv('3')).toEqual({ CUDA_VISIBLE_DEVICES: '3' });
    expect(() => gpuEnv('0,x')).toThrow(/train.gpus "0,x"/);
    expect(() => gpuEnv('1,1')).toThrow(/listed twice/);
  });
});

describe('parseTrainerEvent', () => {
  it('types protocol events and leaves anything else to the log', () => {
    expect(parseTrainerEvent('{"event":"step","step":3,"loss":0.5,"extra":7}')).toEqual({
      event: 'step', step: 3, total_steps: null, epoch: null, loss: 0.5, reward: null, kl: null, learning_rate: null, tokens_per_s: null, extra: 7,
    });
    expect(parseTrainerEvent('{"event":"done","path":"/m"}')).toEqual({ event: 'done', path: '/m', metrics: {}, adapter: false });
    expect(parseTrainerEvent('{"event":"error"}')).toMatchObject({ event: 'error', message: expect.stringMatching(/no message/) });
    for (const line of ['hello', '{"event":"step"}', '{"event":"step","step":"3"}', '{"event":"checkpoint"}', '{"event":"weird"}', '[1]', '{"event":', '']) {
      expect(parseTrainerEvent(line)).toBeUndefined();
    }
    const step = parseTrainerEvent('{"event":"step","step":1,"loss":0.5,"kl":null,"grad_norm":2}');
    expect(step?.event === 'step' && stepMetrics(step)).toEqual({ loss: 0.5, grad_norm: 2 });
  });
});

describe.skipIf(!hasPython3)('runTrainer with a Python trainer script', () => {
  it('runs a script through trainerCommand, and Ctrl-C makes it save a checkpoint and exit 130', async () => {
    const dir = tempDir();
    const configFile = path.join(dir, 'trainer.yaml');
    fs.writeFileSync(configFile, JSON.stringify({ output_dir: path.join(dir, 'out'), max_steps: 3 }));
    const { command, args } = trainerCommand({ python: 'python3', script: FAKE_PY, configFile });
    const done = await runTrainer({ command, args, env: pythonEnv(gpuEnv('none')), logFile: path.join(dir, 'a.log') });
    expect(done).toMatchObject({ status: 'completed', exitCode: 0, stepCount: 3, done: { path: path.join(dir, 'out', 'final'), adapter: false } });
    expect(fs.readFileSync(path.join(dir, 'a.log'), 'utf8')).toContain(`training into ${path.join(dir, 'out')}`);

    fs.writeFileSync(configFile, JSON.stringify({ output_dir: path.join(dir, 'out'), max_steps: 100_000, step_seconds: 0.02 }));
    const controller = new AbortController();
    const events: TrainerEvent[] = [];
    const run = runTrainer({ command, args, logFile: path.join(dir, 'b.log'), signal: controller.signal, onEvent: (e) => {
      events.push(e);
      if (e.event === 'step' && e.step === 3) controller.abort();
    } });
    const o = await run;
    expect(o).toMatchObject({ status: 'interrupted', exitCode: 130, signalsSent: ['SIGINT'] });
    expect(o.lastCheckpoint?.path).toMatch(/out\/checkpoint-\d+$/);
    expect(events.at(-1)?.event).toBe('checkpoint');
  });
});

describe.skipIf(!fs.existsSync(VENV_PYTHON))('runTrainer through accelerate', () => {
  it('launches a module with accelerate.commands.launch and passes --config through to it', async () => {
    const dir = tempDir({
      'pkgfake/__init__.py': '',
      'pkgfake/train.py': 'import json, sys\nprint(json.dumps({"event": "done", "path": sys.argv[2], "metrics": {"argv": sys.argv[1:]}}))\n',
      'accelerate.yaml': "compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\nnum_processes: 1\nuse_cpu: true\nmixed_precision: 'no'\n",
    });
    const { command, args } = trainerCommand({ python: VENV_PYTHON, module: 'pkgfake.train', configFile: '/x/trainer.yaml', numProcesses: 1, accelerateConfig: path.join(dir, 'accelerate.yaml') });
    expect(args.slice(0, 2)).toEqual(['-m', 'accelerate.commands.launch']);
    const o = await runTrainer({ command, args, env: { PYTHONPATH: dir, CUDA_VISIBLE_DEVICES: '' }, cwd: dir, logFile: path.join(dir, 'log') });
    expect(o.status).toBe('completed');
    expect(o.done).toMatchObject({ path: '/x/trainer.yaml', metrics: { argv: ['--config', '/x/trainer.yaml'] } });
  }, 120_000);

  it("Ctrl-C through accelerate's launcher: the trainer still saves its checkpoint, though the launcher exits first", async () => {
    const dir = tempDir({ 'accelerate.yaml': "compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\nnum_processes: 1\nuse_cpu: true\nmixed_precision: 'no'\n" });
    const configFile = path.join(dir, 'trainer.yaml');
    fs.writeFileSync(configFile, JSON.stringify({ output_dir: path.join(dir, 'out'), max_steps: 100_000, step_seconds: 0.05, save_seconds: 4 }));
    const { command, args } = trainerCommand({ python: VENV_PYTHON, script: FAKE_PY, configFile, accelerateConfig: path.join(dir, 'accelerate.yaml') });
    const controller = new AbortController();
    const o = await runTrainer({ command, args, env: { CUDA_VISIBLE_DEVICES: '' }, logFile: path.join(dir, 'log'), signal: controller.signal, onEvent: (e) => {
      if (e.event === 'step' && e.step === 3) controller.abort();
    } });
    expect(o.status).toBe('interrupted');
    expect(o.signalsSent).toEqual(['SIGINT']); // one signal: a second one would make a real trainer stop without saving
    expect(o.lastCheckpoint?.path).toMatch(/out\/checkpoint-\d+$/);
    expect(o.error).toBeUndefined();
    const log = fs.readFileSync(path.join(dir, 'log'), 'utf8');
    expect(log).toContain('interrupted: saving a resumable checkpoint');
    expect(log).toContain('KeyboardInterrupt'); // the launcher gave up waiting after 0.25 s; the trainer went on saving
  }, 120_000);
});
