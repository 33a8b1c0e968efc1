import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Algo } from '../config/schema.js';
import { UserError } from '../errors.js';
import { readRequirements } from '../python/requirements.js';
import { inspectVenv } from '../python/venv.js';
import type { TrainStart } from '../resources/training-start.js';
import { freeBytes, listGpus, type Gpu } from './hardware.js';

const GiB = 1024 ** 3;

/** The trainer venv's interpreter, or a UserError pointing at doctor. */
export async function requireVenv(venvDir: string): Promise<string> {
  const venv = await inspectVenv(venvDir, readRequirements());
  if (venv.state !== 'ok') {
    throw new UserError(
      `the trainer virtualenv is ${venv.state}: ${venv.detail}`,
      venv.state === 'foreign'
        ? 'remove it, or set train.venv to another directory'
        : 'run `massgen-rl doctor --fix` to set it up',
    );
  }
  return venv.python;
}

export interface Devices {
  cpu: boolean;
  /** The GPUs the trainer will see. */
  gpus: Gpu[];
}

/** Which devices train.gpus selects on this machine; asking for a GPU that is not there is a UserError. */
export async function selectDevices(gpusSetting: string): Promise<Devices> {
  if (gpusSetting === 'none') return { cpu: true, gpus: [] };
  const all = await listGpus();
  if (gpusSetting === 'auto') return { cpu: all.length === 0, gpus: all };
  const wanted = gpusSetting.split(',').map(Number);
  const missing = wanted.filter((i) => !all.some((g) => g.index === i));
  if (missing.length) {
    throw new UserError(
      `train.gpus "${gpusSetting}": no GPU ${missing.join(', ')} on this machine (${all.length ? `found ${all.map((g) => `${g.index}: ${g.name}`).join(', ')}` : 'nvidia-smi finds none'})`,
      'use train.gpus: auto or none, or the indices nvidia-smi lists',
    );
  }
  return { cpu: false, gpus: all.filter((g) => wanted.includes(g.index)) };
}

export interface MemoryPlan {
  weightBytes: number;
  /** Bytes each process needs, estimated. */
  perProcess: number;
  available: number;
  where: string;
}

/**
 * Refuses to start a run that cannot fit: free RAM (or the smallest selected GPU's free memory) against
 * an estimate from the weights on disk. Full fine-tuning holds weights, gradients and two AdamW moments
 * (4× the fp32 weights), LoRA little more than the weights; a frozen reference model adds one copy.
 */
export function checkMemory(
  start: TrainStart,
  algo: Algo,
  lora: boolean,
  needsReference: boolean,
  processes: number,
  devices: Devices,
): MemoryPlan {
  const weightBytes = folderWeightBytes(start.adapter ? (start.baseDir ?? start.dir) : start.dir);
  const factor = (lora ? 1.3 : 4) + (needsReference && !lora ? 1 : 0);
  const scale = devices.cpu ? 1 : 0.5; // bf16 on GPU
  const perProcess = weightBytes * factor * scale + 0.75 * GiB;
  const plan = devices.cpu
    ? { weightBytes, perProcess, available: availableRam(), where: 'free RAM' }
    : {
        weightBytes,
        perProcess,
        available: Math.min(...devices.gpus.map((g) => g.memoryFreeMiB * 1024 ** 2)),
        where: 'free memory on the smallest selected GPU',
      };
  const need = devices.cpu ? perProcess * processes : perProcess;
  if (need > plan.available) {
    throw new UserError(
      `not enough memory to train ${algo} (${lora ? 'LoRA' : 'full fine-tuning'}) on ${fmt(weightBytes)} of weights: about ${fmt(need)} needed, ${fmt(plan.available)} ${plan.where}`,
      'enable train.lora, lower train.batch_size or train.num_processes, free memory, or skip this check with train.check_memory: false',
    );
  }
  return plan;
}

/** Checkpoints need room: refuse when the data dir's disk cannot hold a few copies of the weights. */
export function checkDisk(dir: string, start: TrainStart, lora: boolean): void {
  const weights = folderWeightBytes(start.adapter ? (start.baseDir ?? start.dir) : start.dir);
  const need = lora ? 0.5 * GiB : weights * 4;
  const free = freeBytes(dir);
  if (free < need)
    throw new UserError(
      `not enough disk space for checkpoints in ${dir}: ${fmt(free)} free, about ${fmt(need)} needed`,
      'free disk space, or prune old checkpoints (`massgen-rl checkpoints prune`)',
    );
}

function folderWeightBytes(dir: string): number {
  let total = 0;
  for (const f of fs.readdirSync(dir)) {
    if (/\.(safetensors|bin|pt|pth)$/.test(f)) total += fs.statSync(path.join(dir, f)).size;
  }
  return total;
}

/** MemAvailable (what can be allocated without swapping), else the kernel's free figure. */
function availableRam(): number {
  try {
    const m = /^MemAvailable:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch {
    // not Linux
  }
  return os.freemem();
}

function fmt(bytes: number): string {
  return bytes >= GiB ? `${(bytes / GiB).toFixed(1)} GiB` : `${Math.round(bytes / 1024 ** 2)} MiB`;
}
