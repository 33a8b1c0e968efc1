/** The CPU as the trainer venv's `env_report` saw it (`cpu`). */
export interface CpuReport {
  arch?: string;
  model?: string | null;
  cores?: number;
  flags?: Record<string, boolean> | null;
  bf16_native?: boolean;
  bf16_via?: 'torch' | 'flags';
}

const SHOWN: [string, string][] = [
  ['avx2', 'AVX2'],
  ['avx512f', 'AVX-512'],
  ['avx512_bf16', 'AVX512-BF16'],
  ['amx_bf16', 'AMX'],
];

/**
 * What this CPU supports and what a cycle's training will use: `train.bf16: auto` trains in bf16 on a CPU that
 * computes it natively and in float32 elsewhere (about 2× slower a DPO step on the bundled model); bf16 forced on
 * where it is emulated is slower than float32, a warning.
 */
export function cpuCheck(
  cpu: CpuReport,
  bf16: 'auto' | boolean,
  cudaAvailable: boolean,
): { status: 'info' | 'warn'; detail: string; fix?: string } {
  const name = [cpu.model ?? cpu.arch ?? 'unknown CPU', cpu.cores ? `${cpu.cores} cores` : ''].filter(Boolean);
  const flags = cpu.flags ? SHOWN.map(([k, label]) => `${label} ${cpu.flags![k] ? 'yes' : 'no'}`).join(', ') : '';
  const what = `${name.join(', ')}${flags ? `; ${flags}` : ''}`;
  if (cudaAvailable) return { status: 'info', detail: `${what}: training runs on the GPU` };
  const native = cpu.bf16_native === true;
  if (bf16 === true && !native)
    return {
      status: 'warn',
      detail: `${what}: train.bf16 is true, but this CPU has no bf16 instructions: emulated, slower than float32`,
      fix: 'set train.bf16: auto',
    };
  const setting = `train.bf16: ${bf16}`;
  const uses =
    bf16 === false
      ? `float32 (${setting})`
      : native
        ? `bf16 (${setting})`
        : `float32 (${setting}; no bf16 instructions here: a DPO step takes about 2× as long as on a CPU with them)`;
  return { status: 'info', detail: `${what}: training runs in ${uses}` };
}
