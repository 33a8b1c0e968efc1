import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';

export interface Gpu {
  index: number;
  name: string;
  memoryTotalMiB: number;
  memoryFreeMiB: number;
}

/** GPUs as nvidia-smi sees them; an empty list when there is no driver or no GPU. */
export async function listGpus(): Promise<Gpu[]> {
  const r = await execa(
    'nvidia-smi',
    ['--query-gpu=index,name,memory.total,memory.free', '--format=csv,noheader,nounits'],
    {
      reject: false,
      timeout: 15_000,
      stdin: 'ignore',
      maxBuffer: 1 << 20,
    },
  );
  if (r.exitCode !== 0) return [];
  return String(r.stdout)
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [index, name, total, free] = line.split(',').map((s) => s.trim());
      return { index: Number(index), name: name ?? 'GPU', memoryTotalMiB: Number(total), memoryFreeMiB: Number(free) };
    });
}

/** Free bytes on the filesystem holding `dir` (or its nearest existing parent). */
export function freeBytes(dir: string): number {
  let probe = path.resolve(dir);
  while (!fs.existsSync(probe) && path.dirname(probe) !== probe) probe = path.dirname(probe);
  const s = fs.statfsSync(probe);
  return s.bavail * s.bsize;
}
