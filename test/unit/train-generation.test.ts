import { describe, expect, it } from 'vitest';
import { needsGenerationServer } from '../../src/pipeline/train/generation.js';
import type { TrainerConfig } from '../../src/trainers/trainer-config.js';

const LORA = { r: 16, alpha: 32, dropout: 0.05, target_modules: 'all-linear' };

function grpo(settings: Record<string, unknown>): TrainerConfig {
  return {
    model_path: '/m',
    output_dir: '/o',
    dataset_path: '/d',
    lora: LORA,
    use_cpu: true,
    bf16: null,
    resume_from_checkpoint: null,
    deepspeed: null,
    fsdp: null,
    reward_url: null,
    server_url: null,
    mode: 'online',
    generation: 'auto',
    vllm: null,
    ...settings,
  };
}

describe('which online GRPO runs sample from the built-in server', () => {
  it('auto: the built-in trainer on CPU with LoRA and no vllm; server: always; never offline or policy', () => {
    expect(needsGenerationServer(grpo({}), false)).toBe(true);
    expect(needsGenerationServer(grpo({ server_url: 'http://127.0.0.1:1/v1' }), false)).toBe(true); // a resume
    expect(needsGenerationServer(grpo({}), true)).toBe(false); // train.script: its own sampler
    expect(needsGenerationServer(grpo({ use_cpu: false }), false)).toBe(false);
    expect(needsGenerationServer(grpo({ lora: null }), false)).toBe(false);
    expect(needsGenerationServer(grpo({ vllm: { mode: 'server' } }), false)).toBe(false);
    expect(needsGenerationServer(grpo({ generation: 'server', use_cpu: false }), true)).toBe(true);
    expect(needsGenerationServer(grpo({ generation: 'policy' }), false)).toBe(false);
    expect(needsGenerationServer(grpo({ generation: 'vllm' }), false)).toBe(false);
    expect(needsGenerationServer(grpo({ mode: 'offline' }), false)).toBe(false);
    const { server_url: _s, ...sft } = grpo({});
    expect(needsGenerationServer(sft, false)).toBe(false);
  });
});
