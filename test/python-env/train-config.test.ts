import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { ALGOS, type Algo } from '../../src/config/schema.js';
import { UserError } from '../../src/errors.js';
import { pythonEnv } from '../../src/python/module.js';
import { venvPython } from '../../src/python/venv.js';
import type { TrainStart } from '../../src/resources/training-start.js';
import { checkMemory, selectDevices } from '../../src/trainers/preflight.js';
import { checkTrainerSettings } from '../../src/trainers/settings-check.js';
import {
  needsRewardBridge,
  trainerConfig,
  trainerConfigHash,
  writeTrainerConfig,
} from '../../src/trainers/trainer-config.js';
import { configIn, configIssues, tempDir } from '../helpers.js';

const ARGS = { sft: 'SFTArgs', dpo: 'DPOArgs', grpo: 'GRPOArgs', ppo: 'PPOArgs' } as const;

async function checked(dir: string, algos: readonly Algo[] = ALGOS) {
  const loaded = loadConfig({ cwd: dir });
  const settings = await checkTrainerSettings({
    python: venvPython(loaded.paths.venvDir),
    train: loaded.config.train,
    algos,
  });
  return { loaded, settings };
}

describe('the trainer config train writes', () => {
  it('is accepted by every bundled trainer, key for key: the settings train.check returns and the run keys', async () => {
    const yaml =
      'train:\n  lora: { r: 4 }\n  max_steps: 3\n  grpo: { is_correction: "on", is_cap: 2 }\n  ppo: { is_threshold: 0.1 }\n';
    const dir = tempDir({ 'massgen-rl.yaml': yaml, 'model/config.json': '{}', 'data.jsonl': '{}\n' });
    const tis = { sft: [null, null, null], dpo: [null, null, null], grpo: ['on', 0.02, 2], ppo: ['auto', 0.1, 3] };
    const { loaded, settings } = await checked(dir);
    for (const algo of ALGOS) {
      const cfg = trainerConfig(algo, {
        train: loaded.config.train,
        settings: settings[algo]!,
        modelPath: path.join(dir, 'model'),
        outputDir: path.join(dir, 'out'),
        datasetPath: path.join(dir, 'data.jsonl'),
        cpu: true,
        baseDir: dir,
      });
      const file = path.join(dir, `${algo}.yaml`);
      writeTrainerConfig(file, cfg);
      const code = `from massgen_rl_training.${algo} import ${ARGS[algo]}\nfrom massgen_rl_training.args import parse_train_args\nimport json\na = parse_train_args(${ARGS[algo]}, ['--config', '${file}'])\nprint(json.dumps({'max_steps': a.max_steps, 'lora': a.lora, 'use_cpu': a.use_cpu, 'batch': a.per_device_train_batch_size, 'tis': [getattr(a, k, None) for k in ('is_correction', 'is_threshold', 'is_cap')]}))`;
      const r = await execa(venvPython(loaded.paths.venvDir), ['-c', code], { env: pythonEnv(), reject: false });
      expect(r.exitCode, `${algo}: ${r.stderr}`).toBe(0);
      expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).toMatchObject({
        max_steps: 3,
        lora: { r: 4 },
        use_cpu: true,
        batch: 4,
        tis: tis[algo],
      });
    }
  }, 120_000);

  it('is checked by the trainers before a run, each problem naming its key path (exit 2)', async () => {
    const yaml =
      'train:\n  num_processes: 3\n  grpo: { is_correction: sometimes, num_generations: 4 }\n  ppo: { is_cap: 0.5, clip_epsilon: 0.1 }\n  sft: { num_train_epoch: 2 }\n';
    const err = await checked(tempDir({ 'massgen-rl.yaml': yaml })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect(
      (err as UserError).message
        .split('\n')
        .slice(1)
        .map((l) => l.trim()),
    ).toEqual([
      expect.stringMatching(/^train\.grpo\.is_correction must be 'auto', 'on' or 'off'/),
      expect.stringMatching(/^train\.sft\.num_train_epoch: unknown setting of the sft trainer/),
      expect.stringMatching(/^train\.ppo\.is_cap must be a number from 1/),
    ]);
    const batch = await checked(
      tempDir({ 'massgen-rl.yaml': 'train:\n  num_processes: 3\n  grpo: { num_generations: 8 }\n' }),
      ['grpo'],
    ).catch((e: unknown) => e);
    expect((batch as Error).message).toMatch(
      /train\.grpo\.num_generations \(8\): per_device_train_batch_size x processes x gradient_accumulation_steps \(12\)/,
    );
    const vllm = await checked(
      tempDir({ 'massgen-rl.yaml': 'train:\n  gpus: none\n  grpo: { mode: online, vllm: { mode: colocate } }\n' }),
      ['grpo'],
    ).catch((e: unknown) => e);
    expect((vllm as Error).message).toMatch(/train\.grpo\.vllm needs CUDA GPUs, but train\.gpus is none/);
  }, 60_000);

  it("passes train.grpo.vllm through to TRL's GRPOConfig (use_vllm, vllm_mode, vllm_server_*, vllm_*)", async () => {
    const yaml =
      'train:\n  gpus: "0"\n  grpo:\n    mode: online\n    num_generations: 2\n    vllm: { server_host: 10.0.0.2, server_port: 8001, group_port: 51300, server_timeout: 600, max_model_length: 2048 }\n';
    const dir = tempDir({ 'massgen-rl.yaml': yaml, 'model/config.json': '{}', 'data.jsonl': '{}\n' });
    const { loaded, settings } = await checked(dir, ['grpo']);
    const input = {
      train: loaded.config.train,
      modelPath: path.join(dir, 'model'),
      outputDir: path.join(dir, 'out'),
      datasetPath: path.join(dir, 'data.jsonl'),
      cpu: true,
      baseDir: dir,
    };
    const cfg = trainerConfig('grpo', { ...input, settings: settings.grpo! });
    expect(cfg.vllm).toEqual({
      mode: 'server',
      server_base_url: null,
      server_host: '10.0.0.2',
      server_port: 8001,
      server_timeout: 600,
      group_port: 51300,
      gpu_memory_utilization: 0.3,
      tensor_parallel_size: 1,
      max_model_length: 2048,
    });
    expect(needsRewardBridge(cfg)).toBe(true);
    writeTrainerConfig(path.join(dir, 'grpo.yaml'), { ...cfg, reward_url: 'http://127.0.0.1:1/rewards' });
    const fields = [
      'use_vllm',
      'vllm_mode',
      'vllm_server_base_url',
      'vllm_server_host',
      'vllm_server_port',
      'vllm_server_timeout',
      'vllm_group_port',
      'vllm_gpu_memory_utilization',
      'vllm_tensor_parallel_size',
      'vllm_max_model_length',
    ];
    const code = `import json\nfrom massgen_rl_training.args import parse_train_args\nfrom massgen_rl_training.grpo import GRPOArgs, grpo_config\nc = grpo_config(parse_train_args(GRPOArgs, ['--config', '${path.join(dir, 'grpo.yaml')}']))\nprint(json.dumps({k: getattr(c, k) for k in ${JSON.stringify(fields)}}))`;
    const r = await execa(venvPython(loaded.paths.venvDir), ['-c', code], { env: pythonEnv(), reject: false });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).toEqual({
      use_vllm: true,
      vllm_mode: 'server',
      vllm_server_base_url: null,
      vllm_server_host: '10.0.0.2',
      vllm_server_port: 8001,
      vllm_server_timeout: 600,
      vllm_group_port: 51300,
      vllm_gpu_memory_utilization: 0.3,
      vllm_tensor_parallel_size: 1,
      vllm_max_model_length: 2048,
    });
    // where the server runs is not what the run learns with
    const moved = trainerConfig('grpo', {
      ...input,
      settings: { ...settings.grpo, vllm: { ...(cfg.vllm as object), server_host: 'other' } },
    });
    expect(trainerConfigHash(moved)).toBe(trainerConfigHash(cfg));
  }, 120_000);

  it('checks machines with their paths', () => {
    expect(
      configIssues('train:\n  num_machines: 2\n  machine_rank: 2\n  num_processes: 3\n  main_process_port: 70000\n'),
    ).toEqual([expect.stringMatching(/^train\.main_process_port: .*65535/)]);
    expect(configIssues('train:\n  num_machines: 2\n  machine_rank: 2\n  num_processes: 3\n')).toEqual([
      expect.stringMatching(
        /^train\.machine_rank: rank 2 is out of range: train\.num_machines is 2, so a machine's rank is 0 to 1 \(massgen-rl\.yaml:3:17\)$/,
      ),
      expect.stringMatching(
        /^train\.main_process_ip: required with num_machines 2: the address of machine 0 that every machine can reach/,
      ),
      expect.stringMatching(
        /^train\.num_processes: counts the processes of all 2 machines together .* must be a multiple of 2; got 3 \(massgen-rl\.yaml:4:18\)$/,
      ),
    ]);
    expect(configIssues('train:\n  machine_rank: 1\n  main_process_ip: "10.0.0.1; rm -rf /"\n')).toEqual([
      expect.stringMatching(/^train\.main_process_ip: a host name or an IP address/),
    ]);
    expect(configIssues('train:\n  machine_rank: 1\n')).toEqual([
      expect.stringMatching(
        /^train\.machine_rank: rank 1 is out of range: train\.num_machines is 1, so a machine's rank is 0 /,
      ),
    ]);
    expect(
      configIn('train:\n  num_machines: 2\n  num_processes: 16\n  machine_rank: 1\n  main_process_ip: 10.0.0.1\n')
        .config.train,
    ).toMatchObject({ num_machines: 2, machine_rank: 1, main_process_ip: '10.0.0.1' });
  });

  it('hashes what the run learns with, not where it runs', () => {
    const { config } = loadConfig({ cwd: tempDir() });
    const at = (dir: string, lr = 1e-5) =>
      trainerConfig('sft', {
        train: config.train,
        settings: { learning_rate: lr },
        modelPath: `${dir}/m`,
        outputDir: `${dir}/o`,
        datasetPath: `${dir}/d`,
        cpu: true,
        baseDir: dir,
      });
    expect(trainerConfigHash(at('/a'))).toBe(trainerConfigHash(at('/b')));
    expect(trainerConfigHash(at('/a', 1e-3))).not.toBe(trainerConfigHash(at('/a')));
  });

  it("is the run keys and the section's settings (grpo also the reward bridge's address)", () => {
    const { config } = loadConfig({ cwd: tempDir() });
    const input = { train: config.train, modelPath: '/m', outputDir: '/o', datasetPath: '/d', cpu: true, baseDir: '/' };
    const sft = trainerConfig('sft', { ...input, settings: { num_train_epochs: 2 } });
    expect(Object.keys(sft).sort()).toEqual([
      'bf16',
      'dataset_path',
      'deepspeed',
      'fsdp',
      'lora',
      'model_path',
      'num_train_epochs',
      'output_dir',
      'resume_from_checkpoint',
      'use_cpu',
    ]);
    expect(trainerConfig('grpo', { ...input, settings: { mode: 'offline' } })).toMatchObject({
      reward_url: null,
      mode: 'offline',
    });
    expect(needsRewardBridge(trainerConfig('grpo', { ...input, settings: { mode: 'online' } }))).toBe(true);
    expect(needsRewardBridge(trainerConfig('grpo', { ...input, settings: { mode: 'offline' } }))).toBe(false);
    // train.bf16: auto leaves it to the trainer (bf16 where the device computes it natively); a boolean is kept
    expect(sft.bf16).toBeNull();
    const fp32 = trainerConfig('sft', { ...input, train: { ...config.train, bf16: false }, settings: {} });
    expect(fp32.bf16).toBe(false);
  });
});

describe('train preflight', () => {
  it('refuses a model that cannot fit in free RAM, naming the figures and the way out', () => {
    const dir = tempDir({ 'big/config.json': '{}' });
    const weights = path.join(dir, 'big', 'model.safetensors');
    fs.writeFileSync(weights, '');
    fs.truncateSync(weights, 2 ** 40); // sparse: 1 TiB on paper
    const start: TrainStart = {
      ref: './big',
      line: 'big',
      dir: path.join(dir, 'big'),
      adapter: false,
      baseDir: null,
      resource: null,
      checkpoint: null,
      watermark: 0,
    };
    expect(() => checkMemory(start, 'sft', false, false, 1, { cpu: true, gpus: [] })).toThrow(
      /not enough memory to train sft \(full fine-tuning\) on 1024\.0 GiB of weights: about \d+\.\d GiB needed, .* free RAM/,
    );
    const small = { ...start, dir: path.join(dir, 'small') };
    fs.mkdirSync(small.dir);
    fs.writeFileSync(path.join(small.dir, 'model.safetensors'), Buffer.alloc(1024));
    expect(checkMemory(small, 'sft', true, false, 2, { cpu: true, gpus: [] }).weightBytes).toBe(1024);
  });

  it('train.gpus must name GPUs this machine has', async () => {
    expect(await selectDevices('none')).toEqual({ cpu: true, gpus: [] });
    const auto = await selectDevices('auto');
    if (!auto.gpus.length) {
      expect(auto.cpu).toBe(true);
      await expect(selectDevices('0,7')).rejects.toThrow(
        /train\.gpus "0,7": no GPU 0, 7 on this machine \(nvidia-smi finds none\)/,
      );
    }
  });
});
