import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../errors.js';
import type { Store } from '../store/index.js';
import { registerCheckpoint, type RegisteredCheckpoint } from './checkpoints.js';

/** What an imported folder was trained from: a checkpoint of this store, or a weight resource or folder. */
export interface ImportStart {
  /** The ref as given (`builtin:…`, `resource:…`, a folder, or the parent checkpoint's id). */
  ref: string;
  parentId: string | null;
  baseResourceId: string | null;
  /** The full model folder an adapter is served on. */
  baseDir: string;
}

export interface ImportInput {
  folder: string;
  start: ImportStart;
  algo: string;
  /** Where the copy is kept: <dataDir>/imports/<checkpoint id>. */
  dataDir: string;
}

const ADAPTER_FILES = ['adapter_config.json', 'adapter_model.safetensors'];

/**
 * Registers weights trained elsewhere (another machine's trainer output: a PEFT LoRA adapter or a full model
 * folder) as the next checkpoint of its start's line, after checking they fit that start's base model. The
 * folder is copied into the data dir first, so the checkpoint does not depend on where it came from.
 */
export function importCheckpoint(store: Store, input: ImportInput): RegisteredCheckpoint {
  const folder = path.resolve(input.folder);
  const stat = fs.statSync(folder, { throwIfNoEntry: false });
  if (!stat?.isDirectory()) throw new UserError(`checkpoints import: no folder at ${folder}`);
  const adapter = fs.existsSync(path.join(folder, 'adapter_config.json'));
  if (!adapter && !fs.existsSync(path.join(folder, 'config.json')))
    throw new UserError(
      `checkpoints import: ${folder} holds neither adapter_config.json (a LoRA adapter) nor config.json (a model folder)`,
    );
  const base = readJson(path.join(input.start.baseDir, 'config.json'), `the base model of ${input.start.ref}`);
  if (adapter) checkAdapter(folder, base);
  else checkModel(folder, base);
  const target = path.join(input.dataDir, 'imports', `${path.basename(folder)}-${Date.now().toString(36)}`);
  try {
    copyFiles(folder, target);
    return registerCheckpoint(store, {
      path: target,
      algo: input.algo,
      adapter,
      baseModel: input.start.ref,
      baseResourceId: input.start.parentId ? null : input.start.baseResourceId,
      basePath: adapter ? input.start.baseDir : null,
      parentId: input.start.parentId,
      metadata: { imported_from: folder },
    });
  } catch (err) {
    fs.rmSync(target, { recursive: true, force: true });
    throw err;
  }
}

function readJson(file: string, what: string): Record<string, unknown> {
  try {
    const v = JSON.parse(fs.readFileSync(file, 'utf8')) as unknown;
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new UserError(`${what}: no ${file}`);
  }
  throw new UserError(`${what}: ${file} is not a JSON object`);
}

/** A safetensors file's tensor shapes, from its JSON header (8-byte little-endian length, then the header). */
function tensorShapes(file: string): Map<string, number[]> {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const len = Buffer.alloc(8);
    fs.readSync(fd, len, 0, 8, 0);
    const n = Number(len.readBigUInt64LE());
    if (size < 8 || n <= 0 || 8 + n > size || n > 100_000_000) throw new Error('bad header length');
    const head = Buffer.alloc(n);
    fs.readSync(fd, head, 0, n, 8);
    const json = JSON.parse(head.toString('utf8')) as Record<string, { shape?: number[] }>;
    return new Map(Object.entries(json).flatMap(([k, v]) => (Array.isArray(v?.shape) ? [[k, v.shape]] : [])));
  } catch (err) {
    throw new UserError(`${file} is not a safetensors file (${(err as Error).message})`);
  } finally {
    fs.closeSync(fd);
  }
}

function checkAdapter(folder: string, base: Record<string, unknown>): void {
  for (const f of ADAPTER_FILES)
    if (!fs.existsSync(path.join(folder, f)))
      throw new UserError(`checkpoints import: ${folder} holds adapter_config.json but no ${f}`);
  readJson(path.join(folder, 'adapter_config.json'), 'the adapter');
  // A LoRA A matrix reads a layer's input: the hidden size, or the MLP's width for down_proj.
  const widths = new Set([base.hidden_size, base.intermediate_size].filter((x): x is number => typeof x === 'number'));
  const shapes = [...tensorShapes(path.join(folder, 'adapter_model.safetensors'))].filter(([k]) =>
    k.includes('lora_A'),
  );
  if (!shapes.length) throw new UserError(`checkpoints import: ${folder}: the adapter holds no LoRA weights`);
  const misfit = shapes.find(([, s]) => !widths.has(s.at(-1) ?? -1));
  if (misfit)
    throw new UserError(
      `checkpoints import: the adapter does not fit its base model: ${misfit[0]} reads ${misfit[1].at(-1)} inputs, `
        + `the base's layers ${[...widths].join(' or ')}`,
      'name the weights it was trained from with --from',
    );
}

function checkModel(folder: string, base: Record<string, unknown>): void {
  const own = readJson(path.join(folder, 'config.json'), 'checkpoints import: the model');
  if (!fs.readdirSync(folder).some((f) => f.endsWith('.safetensors')))
    throw new UserError(`checkpoints import: ${folder} holds config.json but no .safetensors weights`);
  for (const key of ['model_type', 'hidden_size', 'num_hidden_layers', 'vocab_size'])
    if (own[key] !== base[key])
      throw new UserError(
        `checkpoints import: the model is not its base's architecture: ${key} ${String(own[key])}, the base's ${String(base[key])}`,
        'name the weights it was trained from with --from',
      );
}

/** Copies the folder's regular files (links and anything else refused), subfolders included. */
function copyFiles(from: string, to: string): void {
  fs.mkdirSync(to, { recursive: true });
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    const [src, dst] = [path.join(from, entry.name), path.join(to, entry.name)];
    if (entry.isDirectory()) copyFiles(src, dst);
    else if (entry.isFile()) fs.copyFileSync(src, dst);
    else {
      throw new UserError(`checkpoints import: ${src} is not a regular file (links are not followed)`);
    }
  }
}
