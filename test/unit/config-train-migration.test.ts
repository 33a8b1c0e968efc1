import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { ALGOS } from '../../src/config/schema.js';
import { sectionSettings } from '../../src/trainers/trainer-config.js';
import { configIn, configIssues, tempDir } from '../helpers.js';

const OLD = `train:
  algo: grpo
  epochs: 3
  batch_size: 8
  learning_rate: 0.0002
  gradient_checkpointing: true
  grpo: { num_generations: 8, beta: 0.04 }
  dpo: { beta: 0.2, learning_rate: 0.00001 }
`;

describe('the old spellings of trainer settings', () => {
  it("move to every train.<algo> section under the trainer's name, a key set there winning", () => {
    const { config, deprecations } = configIn(OLD);
    expect(sectionSettings(config.train, 'grpo')).toEqual({
      num_generations: 8,
      beta: 0.04,
      num_train_epochs: 3,
      per_device_train_batch_size: 8,
      learning_rate: 2e-4,
      gradient_checkpointing: true,
    });
    expect(sectionSettings(config.train, 'dpo')).toMatchObject({ beta: 0.2, learning_rate: 1e-5, num_train_epochs: 3 });
    for (const algo of ALGOS)
      expect(config.train[algo]).toMatchObject({ num_train_epochs: 3, per_device_train_batch_size: 8 });
    expect(config.train).not.toHaveProperty('epochs');
    expect(deprecations).toEqual([
      expect.stringMatching(
        /^train\.epochs is deprecated: use train\.<algo>\.num_train_epochs \(train\.grpo\.num_train_epochs, .*train\.ppo\.num_train_epochs\)$/,
      ),
      expect.stringMatching(/^train\.batch_size is deprecated: use train\.<algo>\.per_device_train_batch_size /),
      expect.stringMatching(/^train\.learning_rate is deprecated: use train\.<algo>\.learning_rate /),
      expect.stringMatching(/^train\.gradient_checkpointing is deprecated: use train\.<algo>\.gradient_checkpointing /),
    ]);
  });

  it('keep the data selection of a section apart from its trainer settings', () => {
    const { config } = configIn('train:\n  sft: { select: verified, max_per_task: 2, num_train_epochs: 2 }\n');
    expect(config.train.sft).toMatchObject({ select: 'verified', max_per_task: 2, reward_threshold: 0.5 });
    expect(sectionSettings(config.train, 'sft')).toEqual({ num_train_epochs: 2 });
    expect(configIssues('train:\n  sft: { select: sometimes }\n')).toEqual([
      expect.stringMatching(/^train\.sft\.select: /),
    ]);
  });

  it("turn the old vllm section into the trainer's vllm mapping (absent when not enabled)", () => {
    const on = configIn(
      'train:\n  grpo:\n    mode: online\n    vllm: { enabled: true, server_host: 10.0.0.2, server_timeout_s: 600 }\n',
    );
    expect(on.config.train.grpo.vllm).toEqual({ server_host: '10.0.0.2', server_timeout: 600 });
    expect(on.deprecations).toEqual([
      expect.stringMatching(/^train\.grpo\.vllm\.enabled is deprecated: vLLM is on when train\.grpo\.vllm is set/),
      expect.stringMatching(
        /^train\.grpo\.vllm\.server_timeout_s is deprecated: use train\.grpo\.vllm\.server_timeout$/,
      ),
    ]);
    const off = configIn('train:\n  grpo:\n    vllm: { enabled: false, mode: colocate }\n');
    expect(off.config.train.grpo).not.toHaveProperty('vllm');
  });

  it('in --set move too, and win over the file', () => {
    const dir = tempDir({ 'massgen-rl.yaml': 'train:\n  sft: { num_train_epochs: 2 }\n' });
    const loaded = loadConfig({ cwd: dir, overrides: ['train.epochs=5'] });
    for (const algo of ALGOS) expect(loaded.config.train[algo]).toMatchObject({ num_train_epochs: 5 });
    expect(loaded.deprecations).toEqual([
      '--set train.epochs is deprecated: use --set train.grpo.num_train_epochs, --set train.sft.num_train_epochs, --set train.dpo.num_train_epochs, --set train.ppo.num_train_epochs',
    ]);
  });

  it('leave a config without them as it is, with nothing to say', () => {
    expect(configIn('train:\n  grpo: { num_train_epochs: 2 }\n').deprecations).toEqual([]);
    expect(configIn('').deprecations).toEqual([]);
  });
});
