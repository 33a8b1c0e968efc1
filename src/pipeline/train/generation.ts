import path from 'node:path';
import { startLocalServer, type LocalServer } from '../../serving/local-server.js';
import { CLIENT_CONTEXT_TOKENS, servingPython } from '../../serving/models.js';
import type { TrainRunDetail } from '../../trainers/resume.js';
import type { TrainerConfig } from '../../trainers/trainer-config.js';

/** The name the generation server serves the base weights under (the trainer asks for its synced adapters). */
const SERVED_NAME = 'grpo-base';

/**
 * Online GRPO samples from the built-in server (train.grpo.generation: server; auto: the built-in trainer on CPU
 * with LoRA and no vllm), which the trainer hot-loads its adapter into (python/massgen_rl_training/grpo_server.py).
 */
export function needsGenerationServer(cfg: TrainerConfig, customScript: boolean): boolean {
  if (!('server_url' in cfg) || cfg.mode !== 'online') return false;
  if (cfg.generation === 'server') return true;
  return cfg.generation === 'auto' && !customScript && !cfg.vllm && cfg.lora !== null && cfg.use_cpu;
}

/**
 * The built-in server on the CPU for the run's base weights (a parent adapter is synced by the trainer like any
 * later one): llama.cpp when installed, else transformers; both report logprobs at the sampling temperature.
 */
export async function startGenerationServer(
  venvDir: string,
  detail: Pick<TrainRunDetail, 'start' | 'log_file'>,
  signal?: AbortSignal,
): Promise<LocalServer> {
  const base = detail.start.adapter && detail.start.base_dir ? detail.start.base_dir : detail.start.dir;
  return startLocalServer({
    python: servingPython(venvDir, 'train.grpo.generation'),
    modelDir: base,
    servedName: SERVED_NAME,
    device: 'cpu',
    engine: 'auto',
    maxBatchSize: 8,
    contextTokens: CLIENT_CONTEXT_TOKENS,
    logFile: path.join(path.dirname(detail.log_file), 'generation-server.log'),
    signal,
  });
}
