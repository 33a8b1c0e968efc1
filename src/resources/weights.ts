import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_MODEL_NAME } from '../config/defaults.js';
import type { ResolvedPaths } from '../config/paths.js';
import { UserError } from '../errors.js';
import type { Resource, Store } from '../store/index.js';
import { readModelManifest } from './default-model.js';

export const BUILTIN_WEIGHTS = [DEFAULT_MODEL_NAME] as const;

/** Where a weights reference points. */
export interface ResolvedWeights {
  ref: string;
  kind: 'builtin' | 'resource' | 'path';
  /** Absolute path of the HF model folder or LoRA adapter folder. */
  dir: string;
  /** The folder is a LoRA adapter (adapter_config.json), served on top of its base model. */
  adapter: boolean;
  /** Base model folder for an adapter, when the weight resource records one (metadata.base_path). */
  baseDir?: string;
  resource?: { id: string; name: string; version: number };
}

export interface WeightContext {
  paths: Pick<ResolvedPaths, 'baseDir' | 'storePath' | 'defaultModelDir'>;
  /** The store, or undefined when it does not exist yet (only `resource:` references need it). */
  store(): Store | undefined;
}

/** The reference `resolveWeights` reads back as this weight resource's version: `resource:NAME@V`. */
export function resourceRef(r: { name: string; version: number }): string {
  return `resource:${r.name}@${r.version}`;
}

/**
 * Resolves `builtin:<name>`, `resource:<name>[@<version>|@latest|@production]` (a weight resource in the
 * store; latest version by default) or a folder path relative to the config file. `where` prefixes
 * error messages (e.g. `models.local.local.weights`).
 */
export function resolveWeights(ctx: WeightContext, weights: string, where?: string): ResolvedWeights {
  const ref = weights.trim();
  const fail = (message: string, hint?: string): never => {
    throw new UserError(`${where ? `${where}: ` : ''}${message}`, hint);
  };
  if (ref.startsWith('builtin:')) {
    const name = ref.slice('builtin:'.length);
    if (!(BUILTIN_WEIGHTS as readonly string[]).includes(name)) {
      fail(`unknown built-in weights "${ref}"; available: ${BUILTIN_WEIGHTS.map((b) => `builtin:${b}`).join(', ')}`);
    }
    const dir = ctx.paths.defaultModelDir;
    if (!readModelManifest(dir))
      fail(
        `the built-in model ${name} is not provisioned yet (no converted model in ${dir})`,
        'run `massgen-rl doctor --fix`',
      );
    return { ref, kind: 'builtin', dir, adapter: false };
  }
  if (ref.startsWith('resource:')) return fromResource(ctx, ref, fail);
  const dir = path.resolve(
    ctx.paths.baseDir,
    ref.startsWith('~/') ? path.join(process.env.HOME ?? '~', ref.slice(2)) : ref,
  );
  return { ref, kind: 'path', dir, adapter: checkFolder(dir, ref, fail) };
}

type Fail = (message: string, hint?: string) => never;

function fromResource(ctx: WeightContext, ref: string, fail: Fail): ResolvedWeights {
  const spec = ref.slice('resource:'.length);
  const at = spec.lastIndexOf('@');
  const name = at > 0 ? spec.slice(0, at) : spec;
  const version = at > 0 ? spec.slice(at + 1) : 'latest';
  if (!name) fail(`"${ref}" names no resource; use resource:<name>[@<version>]`);
  if (!/^(\d+|latest|production)$/.test(version)) fail(`"${ref}": the version must be a number, latest or production`);
  const store = ctx.store();
  if (!store) {
    return fail(
      `weights "${ref}" refer to the store, which does not exist yet (${ctx.paths.storePath})`,
      'run `massgen-rl doctor --fix` to create it and record the base model',
    );
  }
  const available = store.resources.list('weight');
  const resource: Resource | undefined =
    version === 'production'
      ? store.resources.production('weight', name)
      : version === 'latest'
        ? store.resources.latest('weight', name)
        : available.find((r) => r.name === name && r.version === Number(version));
  if (!resource) {
    const names = [...new Set(available.map((r) => r.name))].map((n) => {
      const versions = available.filter((r) => r.name === n).map((r) => r.version);
      return `${n} (v${versions.join(', v')})`;
    });
    const known = available.some((r) => r.name === name);
    return fail(
      `${known ? `weight resource "${name}" has no version ${version}` : `unknown weight resource "${name}"`}; ${names.length ? `available: ${names.join('; ')}` : 'the store has no weight resources yet'}`,
      names.length ? undefined : 'run `massgen-rl doctor --fix` to record the base model',
    );
  }
  if (!resource.path) fail(`weight resource ${resource.name} v${resource.version} has no folder on record`);
  const adapter = checkFolder(resource.path!, ref, fail);
  const base = typeof resource.metadata.base_path === 'string' ? resource.metadata.base_path : undefined;
  return {
    ref,
    kind: 'resource',
    dir: resource.path!,
    adapter,
    baseDir: adapter ? base : undefined,
    resource: { id: resource.id, name: resource.name, version: resource.version },
  };
}

/** True for a LoRA adapter folder, false for a full model folder; anything else fails. */
function checkFolder(dir: string, ref: string, fail: Fail): boolean {
  let stat: fs.Stats | undefined;
  try {
    stat = fs.statSync(dir);
  } catch {
    return fail(`no folder at ${dir} (weights "${ref}")`);
  }
  if (!stat.isDirectory()) fail(`${dir} is not a folder (weights "${ref}")`);
  if (fs.existsSync(path.join(dir, 'adapter_config.json'))) return true;
  if (fs.existsSync(path.join(dir, 'config.json'))) return false;
  return fail(
    `${dir} holds neither config.json (a model folder) nor adapter_config.json (a LoRA adapter) (weights "${ref}")`,
  );
}
