/**
 * Process-wide cumulative counters for the loop's per-stage profile (pipeline/loop/cycle-profile.ts): the layers
 * that do the work add to them as they go (a few additions a call, no I/O), and the loop takes a snapshot
 * at each stage's start and end and keeps the difference. Nothing here changes what a cycle computes.
 */

export interface ServerStart {
  pid: number;
  /** The server's /stats URL. */
  statsUrl: string;
  /** performance.now() at spawn and when it answered /health. */
  spawnedAt: number;
  readyAt: number;
  exited: boolean;
}

export interface TrainerStart {
  spawnedAt: number;
  /** performance.now() at its first step event and when it exited; null until then. */
  firstStepAt: number | null;
  endedAt: number | null;
}

export interface ProfileCounters {
  storeWriteMs: number;
  storeWrites: number;
  /** Store writes made while no chat request was in flight (the rest overlaps generation). */
  storeWriteIdleMs: number;
  /** Chat requests answered, and those that ended without an answer (superseded, cancelled or failed). */
  llmRequests: number;
  llmUnanswered: number;
  promptTokens: number;
  completionTokens: number;
  /** Time with at least one chat request in flight (the union of their spans). */
  generationMs: number;
  inFlight: number;
  inFlightSince: number;
  trainingSteps: number;
  trainingExamples: number;
  servers: ServerStart[];
  trainers: TrainerStart[];
}

export const counters: ProfileCounters = {
  storeWriteMs: 0,
  storeWrites: 0,
  storeWriteIdleMs: 0,
  llmRequests: 0,
  llmUnanswered: 0,
  promptTokens: 0,
  completionTokens: 0,
  generationMs: 0,
  inFlight: 0,
  inFlightSince: 0,
  trainingSteps: 0,
  trainingExamples: 0,
  servers: [],
  trainers: [],
};

// Kept for the profile of a long-running process; an old exited server adds nothing to a later stage.
const MAX_KEPT = 64;

let writeDepth = 0;

/** fn timed as a store write; nested transactions (savepoints) count once, in the outermost. */
export function timedStoreWrite<T>(fn: () => T): T {
  if (writeDepth > 0) return fn();
  writeDepth++;
  const start = performance.now();
  try {
    return fn();
  } finally {
    writeDepth--;
    const ms = performance.now() - start;
    counters.storeWriteMs += ms;
    if (counters.inFlight === 0) counters.storeWriteIdleMs += ms;
    counters.storeWrites++;
  }
}

/** A chat request begins: generation time runs while any is in flight. */
export function llmRequestStarted(now = performance.now()): void {
  if (counters.inFlight++ === 0) counters.inFlightSince = now;
}

export function llmRequestEnded(
  usage: { promptTokens: number; completionTokens: number } | undefined,
  now = performance.now(),
): void {
  if (usage) counters.llmRequests++;
  else counters.llmUnanswered++;
  counters.promptTokens += usage?.promptTokens ?? 0;
  counters.completionTokens += usage?.completionTokens ?? 0;
  if (--counters.inFlight === 0) counters.generationMs += now - counters.inFlightSince;
}

/** generationMs up to `now`, the running span of requests in flight included. */
export function generationMsAt(now: number): number {
  return counters.generationMs + (counters.inFlight > 0 ? now - counters.inFlightSince : 0);
}

export function serverStarted(s: Omit<ServerStart, 'exited'>): ServerStart {
  const entry = { ...s, exited: false };
  counters.servers.push(entry);
  if (counters.servers.length > MAX_KEPT) {
    const drop = counters.servers.findIndex((x) => x.exited);
    counters.servers.splice(drop >= 0 ? drop : 0, 1);
  }
  return entry;
}

export function trainerSpawned(now = performance.now()): TrainerStart {
  const entry: TrainerStart = { spawnedAt: now, firstStepAt: null, endedAt: null };
  counters.trainers.push(entry);
  if (counters.trainers.length > MAX_KEPT) counters.trainers.shift();
  return entry;
}

/** A training run's examples: its dataset's rows times the epochs it reached (its last step's epoch; one without). */
export function examplesTrained(rows: number, epoch: number | null | undefined): void {
  counters.trainingExamples += Math.round(rows * (typeof epoch === 'number' && epoch > 0 ? epoch : 1));
}

export function trainerStepped(trainer: TrainerStart | undefined, now = performance.now()): void {
  counters.trainingSteps++;
  if (trainer && trainer.firstStepAt === null) trainer.firstStepAt = now;
}
