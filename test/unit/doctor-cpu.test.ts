import { describe, expect, it } from 'vitest';
import { cpuCheck } from '../../src/pipeline/utilities/doctor-cpu.js';

const FLAGS = { avx2: true, avx512f: true, avx512_bf16: false, amx_bf16: false, amx_tile: false };
const ZEN = { arch: 'x86_64', model: 'AMD EPYC 7B12', cores: 2, flags: FLAGS, bf16_native: false };
const XEON = { ...ZEN, model: 'Intel Xeon', flags: { ...FLAGS, avx512_bf16: true }, bf16_native: true };

describe('doctor: what the CPU supports and what training will use', () => {
  it('names the CPU, its cores and the instruction sets that matter', () => {
    expect(cpuCheck(XEON, 'auto', false)).toEqual({
      status: 'info',
      detail:
        'Intel Xeon, 2 cores; AVX2 yes, AVX-512 yes, AVX512-BF16 yes, AMX no: training runs in bf16 (train.bf16: auto)',
    });
  });

  it('says a CPU without bf16 instructions trains in float32, and why it is slower', () => {
    const { status, detail } = cpuCheck(ZEN, 'auto', false);
    expect(status).toBe('info');
    expect(detail).toMatch(/AVX512-BF16 no, AMX no: training runs in float32 \(train\.bf16: auto; no bf16 instr/);
    expect(cpuCheck(XEON, false, false).detail).toMatch(/training runs in float32 \(train\.bf16: false\)$/);
  });

  it('warns when bf16 is forced on a CPU that only emulates it', () => {
    expect(cpuCheck(ZEN, true, false)).toMatchObject({ status: 'warn', fix: 'set train.bf16: auto' });
    expect(cpuCheck(XEON, true, false)).toMatchObject({
      status: 'info',
      detail: expect.stringMatching(/training runs in bf16 \(train\.bf16: true\)$/),
    });
  });

  it('leaves training to the GPU when torch sees one, and copes with a CPU it could not read', () => {
    expect(cpuCheck(ZEN, true, true)).toMatchObject({ status: 'info', detail: expect.stringMatching(/on the GPU$/) });
    expect(cpuCheck({ arch: 'aarch64', flags: null, bf16_native: false }, 'auto', false).detail).toMatch(
      /^aarch64: training runs in float32/,
    );
  });
});
