import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { ALGOS } from '../../src/config/schema.js';
import { checkMemory, selectDevices } from '../../src/trainers/preflight.js';
import type { TrainStart } from '../../src/resources/training-start.js';
import { needsRewardBridge, trainerConfig, trainerConfigHash, writeTrainerConfig } from '../../src/trainers/trainer-config.js';
import { pythonEnv } from '../../src/python/module.js';
import { venvPython } from '../../src/python/venv.js';
import { tempDir } from '../helpers.js';

const ARGS = { sft: 'SFTArgs', dpo: 'DPOArgs', grpo: 'GRPOArgs', ppo: 'PPOArgs' } as const;

describe('the trainer config train writes', () => {
  it('is accepted by every bundled trainer, key for key (the TypeScript and Python sides agree)', async () => {
    const yaml = 'train:\n  lora: { r: 4 }\n  max_steps: 3\n  grpo: { is_correction: "on", is_cap: 2 }\n  ppo: { is_threshold: 0.1 }\n';
    const dir = tempDir({ 'massgen-rl.yaml': yaml, 'model/config.json': '{}', 'data.jsonl': '{}\n' });
    const tis = { sft: [null, null, null], dpo: [null, null, null], grpo: ['on', 0.02, 2], ppo: ['auto', 0.1, 3] };
    const loaded = loadConfig({ cwd: dir });
    for (const algo of ALGOS) {
      const cfg = trainerConfig(algo, { train: loaded.config.train, modelPath: path.join(dir, 'model'), outputDir: path.join(dir, 'out'), datasetPath: path.join(dir, 'data.jsonl'), cpu: true, baseDir: dir });
      if (needsRewardBridge(cfg) || 'mode' in cfg) Object.assign(cfg, { reward_url: 'http://127.0.0.1:1/rewards' });
      const file = path.join(dir, `${algo}.yaml`);
      writeTrainerConfig(file, cfg);
      const code = `from massgen_rl_trainers.train.${algo} import ${ARGS[algo]}\nfrom massgen_rl_trainers.train.args import parse_train_args\nimport json\na = parse_train_args(${ARGS[algo]}, ['--config', '${file}'])\nprint(json.dumps({'max_steps': a.max_steps, 'lora': a.lora, 'use_cpu': a.use_cpu, 'tis': [getattr(a, k, None) for k in ('is_correction', 'is_threshold', 'is_cap')]}))`;
      const r = await execa(venvPython(loaded.paths.venvDir), ['-c', code], { env: pythonEnv(), reject: false });
      expect(r.exitCode, `${algo}: ${r.stderr}`).toBe(0);
      expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).toMatchObject({ max_steps: 3, lora: { r: 4 }, use_cpu: true, tis: tis[algo] });
    }
  }, 120_000);

  it('checks the mismatch correction settings (train.grpo / train.ppo is_*) with their paths', () => {
    const dir = tempDir({ 'massgen-rl.yaml': 'train:\n  grpo: { is_correction: sometimes }\n  ppo: { is_cap: 0.5, is_threshold: -1 }\n' });
    let issues: string[] = [];
    try {
      loadConfig({ cwd: dir });
    } catch (err) {
      issues = (err as ConfigError).issues;
    }
    expect(issues).toEqual([
      expect.stringMatching(/^train\.grpo\.is_correction: .*"auto"\|"on"\|"off"/),
      expect.stringMatching(/^train\.ppo\.is_cap: /),
      expect.stringMatching(/^train\.ppo\.is_threshold: /),
    ]);
  });

  it('hashes what the run learns with, not where it runs', () => {
    const { config } = loadConfig({ cwd: tempDir() });
    const at = (dir: string, lr = config.train.learning_rate) => trainerConfig('sft', { train: { ...config.train, learning_rate: lr }, modelPath: `${dir}/m`, outputDir: `${dir}/o`, datasetPath: `${dir}/d`, cpu: true, baseDir: dir });
    expect(trainerConfigHash(at('/a'))).toBe(trainerConfigHash(at('/b')));
    expect(trainerConfigHash(at('/a', 1e-3))).not.toBe(trainerConfigHash(at('/a')));
  });

  it('is one typed object per algorithm with exactly its keys', () => {
    const { config } = loadConfig({ cwd: tempDir() });
    const input = { train: config.train, modelPath: '/m', outputDir: '/o', datasetPath: '/d', cpu: true, baseDir: '/' };
    const sft = Object.keys(trainerConfig('sft', input));
    expect(Object.keys(trainerConfig('dpo', input)).filter((k) => !sft.includes(k))).toEqual(['beta']);
    expect(Object.keys(trainerConfig('grpo', input)).filter((k) => !sft.includes(k))).toEqual(['beta', 'num_generations', 'mode', 'reward_url', 'max_completion_length', 'temperature', 'is_correction', 'is_threshold', 'is_cap']);
    expect(Object.keys(trainerConfig('ppo', input)).filter((k) => !sft.includes(k))).toEqual(['beta', 'clip_epsilon', 'max_completion_length', 'old_logprobs', 'is_correction', 'is_threshold', 'is_cap']);
    expect(needsRewardBridge(trainerConfig('grpo', { ...input, train: { ...config.train, grpo: { ...config.train.grpo, mode: 'online' } } }))).toBe(true);
    expect(needsRewardBridge(trainerConfig('grpo', input))).toBe(false);
  });
});

describe('train preflight', () => {
  it('refuses a model that cannot fit in free RAM, naming the figures and the way out', () => {
    const dir = tempDir({ 'big/config.json': '{}' });
    const weights = path.join(dir, 'big', 'model.safetensors');
    fs.writeFileSync(weights, '');
    fs.truncateSync(weights, 2 ** 40); // sparse: 1 TiB on paper
    const start: TrainStart = { ref: './big', line: 'big', dir: path.join(dir, 'big'), adapter: false, baseDir: null, resource: null, checkpoint: null, watermark: 0 };
    expect(() => checkMemory(start, 'sft', false, false, 1, { cpu: true, gpus: [] })).toThrow(/not enough memory to train sft \(full fine-tuning\) on 1024\.0 GiB of weights: about \d+\.\d GiB needed, .* free RAM/);
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
      await expect(selectDevices('0,7')).rejects.toThrow(/train\.gpus "0,7": no GPU 0, 7 on this machine \(nvidia-smi finds none\)/);
    }
  });
});
