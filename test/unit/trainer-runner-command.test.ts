import { describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.js';
import {
  gpuEnv,
  parseTrainerEvent,
  stepCompletionTokens,
  stepMetrics,
  trainerCommand,
} from '../../src/trainers/runner.js';

describe('trainerCommand', () => {
  it('runs a bundled trainer as a module, a user script directly, and several processes through accelerate', () => {
    expect(trainerCommand({ python: 'py', module: 'grpo', configFile: 'c.yaml' })).toEqual({
      command: 'py',
      args: ['-m', 'massgen_rl_training.grpo', '--config', 'c.yaml'],
    });
    expect(trainerCommand({ python: 'py', module: 'pkg.train', configFile: 'c.yaml' }).args).toEqual([
      '-m',
      'pkg.train',
      '--config',
      'c.yaml',
    ]);
    expect(trainerCommand({ python: 'py', script: '/s/train.py', configFile: 'c.yaml', numProcesses: 1 }).args).toEqual(
      ['/s/train.py', '--config', 'c.yaml'],
    );
    expect(trainerCommand({ python: 'py', module: 'sft', configFile: 'c.yaml', numProcesses: 2 }).args).toEqual([
      '-m',
      'accelerate.commands.launch',
      '--num_processes',
      '2',
      '-m',
      'massgen_rl_training.sft',
      '--config',
      'c.yaml',
    ]);
    expect(
      trainerCommand({
        python: 'py',
        script: 't.py',
        configFile: 'c.yaml',
        numProcesses: 4,
        accelerateConfig: 'ds.yaml',
        cpu: true,
      }).args,
    ).toEqual([
      '-m',
      'accelerate.commands.launch',
      '--num_processes',
      '4',
      '--config_file',
      'ds.yaml',
      '--cpu',
      't.py',
      '--config',
      'c.yaml',
    ]);
    expect(() => trainerCommand({ python: 'py', module: 'sft', configFile: 'c', numProcesses: 0 })).toThrow(UserError);
    expect(() => trainerCommand({ python: 'py', configFile: 'c' })).toThrow(/exactly one of module or script/);
  });

  it("over several machines: the total process count, this machine's rank and where machine 0 listens", () => {
    const machines = { count: 2, rank: 1, mainIp: '10.0.0.1' };
    expect(
      trainerCommand({
        python: 'py',
        module: 'sft',
        configFile: 'c.yaml',
        numProcesses: 4,
        accelerateConfig: 'z2.yaml',
        mainProcessPort: 29600,
        machines,
      }).args,
    ).toEqual([
      '-m',
      'accelerate.commands.launch',
      '--main_process_port',
      '29600',
      '--num_processes',
      '4',
      '--config_file',
      'z2.yaml',
      '--num_machines',
      '2',
      '--machine_rank',
      '1',
      '--main_process_ip',
      '10.0.0.1',
      '-m',
      'massgen_rl_training.sft',
      '--config',
      'c.yaml',
    ]);
    // without a config file accelerate would start a lone process on a machine with one GPU: torchrun is asked for
    expect(
      trainerCommand({ python: 'py', module: 'sft', configFile: 'c.yaml', numProcesses: 2, machines }).args,
    ).toEqual([
      '-m',
      'accelerate.commands.launch',
      '--num_processes',
      '2',
      '--multi_gpu',
      '--num_machines',
      '2',
      '--machine_rank',
      '1',
      '--main_process_ip',
      '10.0.0.1',
      '-m',
      'massgen_rl_training.sft',
      '--config',
      'c.yaml',
    ]);
    expect(
      trainerCommand({
        python: 'py',
        module: 'sft',
        configFile: 'c.yaml',
        numProcesses: 2,
        machines: { ...machines, count: 1, rank: 0 },
      }).args,
    ).not.toContain('--num_machines');
    expect(() => trainerCommand({ python: 'py', module: 'sft', configFile: 'c', numProcesses: 3, machines })).toThrow(
      /3 processes, machine 1 of 2/,
    );
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
      event: 'step',
      step: 3,
      total_steps: null,
      epoch: null,
      loss: 0.5,
      reward: null,
      kl: null,
      learning_rate: null,
      tokens_per_s: null,
      extra: 7,
    });
    expect(parseTrainerEvent('{"event":"done","path":"/m"}')).toEqual({
      event: 'done',
      path: '/m',
      metrics: {},
      adapter: false,
    });
    expect(parseTrainerEvent('{"event":"error"}')).toMatchObject({
      event: 'error',
      message: expect.stringMatching(/no message/),
    });
    for (const line of [
      'hello',
      '{"event":"step"}',
      '{"event":"step","step":"3"}',
      '{"event":"checkpoint"}',
      '{"event":"weird"}',
      '[1]',
      '{"event":',
      '',
    ]) {
      expect(parseTrainerEvent(line)).toBeUndefined();
    }
    const step = parseTrainerEvent('{"event":"step","step":1,"loss":0.5,"kl":null,"grad_norm":2}');
    expect(step?.event === 'step' && stepMetrics(step)).toEqual({ loss: 0.5, grad_norm: 2 });
    expect(step?.event === 'step' && stepCompletionTokens(step)).toBeNull();
    const grpo = parseTrainerEvent('{"event":"step","step":1,"loss":0.5,"metrics":{"completions/mean_length":41.5}}');
    expect(grpo?.event === 'step' && stepCompletionTokens(grpo)).toBe(41.5);
  });
});
