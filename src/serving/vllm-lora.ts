import { remoteUrls, type ModelConfig } from '../config/schema.js';
import { errorMessage, UserError } from '../errors.js';
import type { Resource } from '../store/index.js';

export interface VllmTarget {
  baseUrl: string;
  apiKey?: string;
}

export interface LoraCall {
  action: 'load' | 'unload';
  loraName: string;
  ok: boolean;
  detail: string;
}

/**
 * vLLM's runtime LoRA endpoints (a server started with --enable-lora and
 * VLLM_ALLOW_RUNTIME_LORA_UPDATING=True): POST {base}/load_lora_adapter {lora_name, lora_path} and
 * POST {base}/unload_lora_adapter {lora_name}, where base is the OpenAI base URL (…/v1).
 */
export async function loraCall(
  target: VllmTarget,
  action: 'load' | 'unload',
  loraName: string,
  loraPath?: string,
  timeoutMs = 120_000,
): Promise<LoraCall> {
  const url = `${target.baseUrl.replace(/\/+$/, '')}/${action}_lora_adapter`;
  const body = action === 'load' ? { lora_name: loraName, lora_path: loraPath } : { lora_name: loraName };
  try {
    const res = await fetch(url, {
      method: 'POST',
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
      headers: {
        'content-type': 'application/json',
        ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}),
      },
    });
    const text = (await res.text()).slice(0, 500);
    return {
      action,
      loraName,
      ok: res.ok,
      detail: res.ok ? `${url}: ${res.status}` : `${url}: HTTP ${res.status} ${text}`,
    };
  } catch (err) {
    return { action, loraName, ok: false, detail: `${url}: ${errorMessage(err)}` };
  }
}

/** The name a deployed adapter is served under: its weight line and version. */
export function loraName(line: string, version: number): string {
  return `${line}-v${version}`;
}

/**
 * The model name requests to remote model `modelName` carry for weights of a resource set: the adapter's
 * LINE-vN; a UserError when the server cannot switch to these weights (only adapters of models.*.lora.line).
 */
export function servedAdapterName(modelName: string, model: ModelConfig, weight: Resource): string {
  if (!model.lora || model.lora.line !== weight.name || !weight.metadata.adapter || !weight.path) {
    throw new UserError(
      `models.${modelName} runs at ${remoteUrls(model).join(', ') || 'its base_url'}, which can only switch to LoRA adapters of the line in models.${modelName}.lora.line; ${weight.name} v${weight.version} is not one`,
    );
  }
  return loraName(weight.name, weight.version);
}

/** Where a remote model's adapters are loaded by massgen-rl: every replica when models.*.lora.load_adapters, else none. */
export function adapterTargets(model: ModelConfig, apiKey: string | undefined): VllmTarget[] {
  return model.lora?.load_adapters ? remoteUrls(model).map((baseUrl) => ({ baseUrl, apiKey })) : [];
}

/** Loads an adapter unless the server already has it (vLLM answers 400 "already been loaded"). */
export async function ensureAdapter(target: VllmTarget, name: string, path: string): Promise<LoraCall> {
  const r = await loraCall(target, 'load', name, path);
  return r.ok || /already (been )?loaded/i.test(r.detail) ? { ...r, ok: true } : r;
}
