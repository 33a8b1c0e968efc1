import { describe, expect, it } from 'vitest';
import { readCycle } from '../../src/scheduler/cycles.js';
import { childCpuMs, profileBetween, serverGeneration, type ProfileSnapshot } from '../../src/util/stage-profile.js';

const snap = (over: Partial<ProfileSnapshot>): ProfileSnapshot => ({
  at: 0,
  selfCpuMs: 0,
  reapedCpuMs: 0,
  storeWriteMs: 0,
  storeWrites: 0,
  storeWriteIdleMs: 0,
  llmRequests: 0,
  llmUnanswered: 0,
  promptTokens: 0,
  completionTokens: 0,
  generationMs: 0,
  trainingSteps: 0,
  trainingExamples: 0,
  servers: [],
  trainers: [],
  ...over,
});
const server = (pid: number, cpuMs: number | null, stats: ProfileSnapshot['servers'][number]['stats'] = null) => ({
  pid,
  spawnedAt: 0,
  readyAt: 0,
  cpuMs,
  stats,
});

describe('childCpuMs', () => {
  it('adds reaped children and the live servers’ growth, a server started in the span from zero', () => {
    const before = snap({ reapedCpuMs: 100, servers: [server(1, 500)] });
    const after = snap({ reapedCpuMs: 130, servers: [server(1, 800), server(2, 40)] });
    expect(childCpuMs(before, after)).toBe(30 + 300 + 40);
  });

  it('does not count twice a server reaped in the span: its use before the span leaves the reaped figure', () => {
    const before = snap({ reapedCpuMs: 0, servers: [server(1, 500)] });
    const after = snap({ reapedCpuMs: 650, servers: [] }); // it used 150 more, then exited and was reaped
    expect(childCpuMs(before, after)).toBe(150);
  });

  it('is null off Linux, and never negative', () => {
    expect(childCpuMs(snap({ reapedCpuMs: null }), snap({}))).toBeNull();
    expect(childCpuMs(snap({ servers: [server(1, 500)] }), snap({}))).toBe(0);
  });
});

describe('serverGeneration', () => {
  it('gives the mean rows a decoding step and prefill’s share of the step seconds, from the deltas', () => {
    const before = snap({
      servers: [server(1, 0, { decode_tokens: 100, decode_steps: 100, step_s: 10, prefill_s: 5, convert_s: 3 })],
    });
    const after = snap({
      servers: [
        server(1, 0, { decode_tokens: 500, decode_steps: 200, step_s: 20, prefill_s: 7, convert_s: 3 }),
        server(2, 0, { decode_tokens: 300, decode_steps: 50, step_s: 10, prefill_s: 1, convert_s: 1.5 }),
      ],
    });
    expect(serverGeneration(before, after)).toEqual({ occupancy: 4.67, prefillShare: 0.15, convertMs: 1500 });
  });

  it('is null where no server reports the counters (a remote backend, the transformers engine)', () => {
    expect(serverGeneration(snap({}), snap({ servers: [server(1, 0, {})] }))).toEqual({
      occupancy: null,
      prefillShare: null,
      convertMs: null,
    });
  });
});

describe('profileBetween', () => {
  it('splits the wall time into start-up, generation, training, store writes and the idle rest', () => {
    const before = snap({ at: 1000, selfCpuMs: 50, completionTokens: 10, generationMs: 400, storeWriteMs: 5 });
    const after = snap({
      at: 11_000,
      selfCpuMs: 1050,
      reapedCpuMs: 2000,
      llmRequests: 4,
      llmUnanswered: 2,
      promptTokens: 800,
      completionTokens: 1010,
      generationMs: 4400,
      storeWriteMs: 305,
      storeWrites: 3,
      storeWriteIdleMs: 100,
      trainingSteps: 20,
      trainingExamples: 60,
      servers: [{ pid: 7, spawnedAt: 1500, readyAt: 2500, cpuMs: 0, stats: null }],
      trainers: [
        { spawnedAt: 200, firstStepAt: 300, endedAt: 900 }, // an earlier stage's trainer
        { spawnedAt: 6000, firstStepAt: 7000, endedAt: 10_000 },
      ],
    });
    const p = profileBetween(before, after);
    expect(p.wall_ms).toBe(10_000);
    expect(p.cpu_ms).toEqual({ self: 1000, children: 2000 });
    expect(p.startup).toEqual({ ms: 2000, servers: 1, server_ms: 1000, convert_ms: null, trainer_ms: 1000 });
    expect(p.generation).toMatchObject({
      ms: 4000,
      requests: 4,
      unanswered: 2,
      completion_tokens: 1000,
      tokens_per_s: 250,
    });
    expect(p.training).toEqual({ ms: 3000, steps: 20, examples: 60, examples_per_s: 20 });
    expect(p.store).toEqual({ ms: 300, writes: 3 });
    expect(p.idle_ms).toBe(10_000 - 4000 - 3000 - 2000 - 100);
  });

  it('has no rates without generation or training, and idle never below zero', () => {
    const p = profileBetween(snap({ at: 0 }), snap({ at: 100, generationMs: 500 }));
    expect(p.generation.tokens_per_s).toBe(0);
    expect(p.training.examples_per_s).toBeNull();
    expect(p.startup.trainer_ms).toBeNull();
    expect(p.idle_ms).toBe(0);
  });
});

describe('a stored cycle', () => {
  it('reads without a profile, and a profile of another shape is dropped rather than losing the cycle', () => {
    const stage = { status: 'done', started_at: 1, finished_at: 2 };
    const cycle = (collect: object) => ({ cycle: 3, started_at: 1, resumed: 0, stages: { collect } });
    expect(readCycle(cycle(stage))?.stages.collect).toEqual(stage);
    const odd = readCycle(cycle({ ...stage, profile: { wall_ms: 'soon' } }));
    expect(odd?.stages.collect).toEqual(stage);
    const p = profileBetween(snap({}), snap({ at: 5 }));
    expect(readCycle(cycle({ ...stage, profile: p }))?.stages.collect?.profile).toEqual(p);
  });
});
