import { z } from 'zod';
import type { ProfileCounters, TrainerStart } from './profile-counters.js';

/**
 * What one loop stage spent, from snapshots at its start and end (pipeline/loop/profile-snapshot.ts): the
 * arithmetic is here, pure, so it can be tested on made-up counters.
 */

/** A local server's /stats counters (llama.cpp engine; the other engines report none of the step ones). */
export interface ServerCounters {
  prefill_tokens?: number;
  decode_tokens?: number;
  decode_steps?: number;
  step_s?: number;
  prefill_s?: number;
  convert_s?: number;
}

export interface ServerSnapshot {
  pid: number;
  spawnedAt: number;
  readyAt: number;
  /** utime + stime (+ its reaped children's) from /proc/<pid>/stat; null when unreadable (gone, not Linux). */
  cpuMs: number | null;
  stats: ServerCounters | null;
}

/** A trainer's start, as the counters hold it. */
export type TrainerSnapshot = TrainerStart;

/** The cumulative counters at one moment (their in-flight bookkeeping left out), with the CPU and servers then. */
export interface ProfileSnapshot extends Omit<ProfileCounters, 'inFlight' | 'inFlightSince' | 'servers' | 'trainers'> {
  /** performance.now() */
  at: number;
  selfCpuMs: number;
  /** Children this process has reaped (cutime + cstime); null off Linux. */
  reapedCpuMs: number | null;
  servers: ServerSnapshot[];
  trainers: TrainerSnapshot[];
}

const num = z.number().nullable();
export const STAGE_PROFILE = z.object({
  wall_ms: z.number(),
  cpu_ms: z.object({ self: z.number(), children: num }),
  startup: z.object({
    ms: z.number(),
    servers: z.number(),
    server_ms: z.number(),
    convert_ms: num,
    trainer_ms: num,
  }),
  generation: z.object({
    ms: z.number(),
    requests: z.number(),
    /** Requests that ended without an answer: superseded by the orchestration, cancelled, failed. */
    unanswered: z.number(),
    prompt_tokens: z.number(),
    completion_tokens: z.number(),
    tokens_per_s: num,
    occupancy: num,
    prefill_share: num,
  }),
  training: z.object({ ms: z.number(), steps: z.number(), examples: z.number(), examples_per_s: num }),
  store: z.object({ ms: z.number(), writes: z.number() }),
  idle_ms: z.number(),
});
export type StageProfile = z.infer<typeof STAGE_PROFILE>;

const round = (x: number, digits = 0) => Math.round(x * 10 ** digits) / 10 ** digits;
const rate = (n: number, ms: number) => (ms > 0 ? round((n * 1000) / ms, 2) : null);

/**
 * Server CPU over the span: the live servers' growth since the start (a server started in the span from 0),
 * plus what this process reaped in the span, less what a server reaped in the span had already used at the
 * start (its whole life is in the reaped figure).
 */
export function childCpuMs(before: ProfileSnapshot, after: ProfileSnapshot): number | null {
  if (before.reapedCpuMs === null || after.reapedCpuMs === null) return null;
  const earlier = new Map(before.servers.map((s) => [s.pid, s.cpuMs ?? 0]));
  let total = after.reapedCpuMs - before.reapedCpuMs;
  const live = new Set<number>();
  for (const s of after.servers) {
    if (s.cpuMs === null) continue;
    live.add(s.pid);
    total += s.cpuMs - (earlier.get(s.pid) ?? 0);
  }
  for (const [pid, cpu] of earlier) if (!live.has(pid)) total -= cpu;
  return Math.max(0, round(total));
}

/** Server-side generation over the span: mean rows a decoding step, and prefill's share of the step seconds. */
export function serverGeneration(
  before: ProfileSnapshot,
  after: ProfileSnapshot,
): { occupancy: number | null; prefillShare: number | null; convertMs: number | null } {
  const earlier = new Map(before.servers.map((s) => [s.pid, s.stats]));
  let [decodeTokens, decodeSteps, stepS, prefillS, convertS, reported] = [0, 0, 0, 0, 0, false];
  for (const s of after.servers) {
    if (!s.stats) continue;
    const was = earlier.get(s.pid) ?? {};
    const d = (k: keyof ServerCounters) => (s.stats![k] ?? 0) - (was[k] ?? 0);
    reported ||= s.stats.decode_steps !== undefined || s.stats.convert_s !== undefined;
    decodeTokens += d('decode_tokens');
    decodeSteps += d('decode_steps');
    stepS += d('step_s');
    prefillS += d('prefill_s');
    convertS += d('convert_s');
  }
  return {
    occupancy: decodeSteps > 0 ? round(decodeTokens / decodeSteps, 2) : null,
    prefillShare: stepS > 0 ? round(prefillS / stepS, 3) : null,
    convertMs: reported ? round(convertS * 1000) : null,
  };
}

export function profileBetween(before: ProfileSnapshot, after: ProfileSnapshot): StageProfile {
  const wall = after.at - before.at;
  const inSpan = (t: number) => t >= before.at && t <= after.at;
  const started = after.servers.filter((s) => inSpan(s.spawnedAt));
  const serverMs = started.reduce((sum, s) => sum + (s.readyAt - s.spawnedAt), 0);
  const trainers = after.trainers.filter((t) => inSpan(t.spawnedAt));
  const trainerStart = trainers.filter((t) => t.firstStepAt !== null);
  const trainerMs = trainerStart.length
    ? trainerStart.reduce((sum, t) => sum + (t.firstStepAt! - t.spawnedAt), 0)
    : null;
  // training proper: from the first step to the trainer's end (or the stage's)
  const trainingMs = trainerStart.reduce((sum, t) => sum + ((t.endedAt ?? after.at) - t.firstStepAt!), 0);
  const generationMs = after.generationMs - before.generationMs;
  const completion = after.completionTokens - before.completionTokens;
  const examples = after.trainingExamples - before.trainingExamples;
  const server = serverGeneration(before, after);
  const startupMs = serverMs + (trainerMs ?? 0);
  const storeIdleMs = after.storeWriteIdleMs - before.storeWriteIdleMs;
  return {
    wall_ms: round(wall),
    cpu_ms: { self: round(after.selfCpuMs - before.selfCpuMs), children: childCpuMs(before, after) },
    startup: {
      ms: round(startupMs),
      servers: started.length,
      server_ms: round(serverMs),
      convert_ms: server.convertMs,
      trainer_ms: trainerMs === null ? null : round(trainerMs),
    },
    generation: {
      ms: round(generationMs),
      requests: after.llmRequests - before.llmRequests,
      unanswered: after.llmUnanswered - before.llmUnanswered,
      prompt_tokens: after.promptTokens - before.promptTokens,
      completion_tokens: completion,
      tokens_per_s: rate(completion, generationMs),
      occupancy: server.occupancy,
      prefill_share: server.prefillShare,
    },
    training: {
      ms: round(trainingMs),
      steps: after.trainingSteps - before.trainingSteps,
      examples,
      examples_per_s: examples > 0 ? rate(examples, trainingMs) : null,
    },
    store: { ms: round(after.storeWriteMs - before.storeWriteMs, 1), writes: after.storeWrites - before.storeWrites },
    // what none of the above covers: waits, scoring, the loop's own work (parts that overlap are counted once
    // where it is known: store writes only while no request was in flight)
    idle_ms: round(Math.max(0, wall - generationMs - trainingMs - startupMs - storeIdleMs)),
  };
}
