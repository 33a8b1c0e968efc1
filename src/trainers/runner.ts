import { execa } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { UserError, errorMessage } from '../errors.js';
import { eachLine, LineTail } from '../util/bounded-lines.js';
import { trainerSpawned, trainerStepped } from '../util/profile-counters.js';
import { groupStopper } from './process-group.js';
import {
  parseTrainerEvent,
  type CheckpointEvent,
  type DoneEvent,
  type StepEvent,
  type TrainerEvent,
} from './trainer-events.js';

export * from './trainer-events.js';
export { gpuEnv, trainerCommand, TRAINER_PACKAGE, type TrainerCommand, type TrainerCommandOptions } from './launch.js';

export interface RunTrainerOptions {
  command: string;
  args: string[];
  /** Added to this process's environment (e.g. pythonEnv(gpuEnv(gpus))). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** stderr, non-event stdout and a header/footer per run are appended here. */
  logFile: string;
  /** Aborting asks the trainer to stop: SIGINT, then SIGTERM after graceMs, then SIGKILL. */
  signal?: AbortSignal;
  onEvent?: (e: TrainerEvent) => void;
  /** Past this the trainer is stopped the same graceful way and the run fails. */
  timeoutMs?: number;
  /** Time to save a checkpoint and exit after SIGINT (default 120 s). */
  graceMs?: number;
  /** Time between SIGTERM and SIGKILL (default 10 s). */
  killAfterMs?: number;
  /** Step events kept in the outcome (the last N; default 1000). */
  keepSteps?: number;
  /** Called with the trainer's pid (its process group) once it is spawned. */
  onSpawn?: (pid: number) => void;
}

export type TrainerStatus = 'completed' | 'failed' | 'interrupted';

export interface TrainerOutcome {
  status: TrainerStatus;
  exitCode: number | null;
  /** The signal that ended the trainer, if one did. */
  signal: string | null;
  done?: DoneEvent;
  lastCheckpoint?: CheckpointEvent;
  steps: StepEvent[];
  stepCount: number;
  error?: string;
  timedOut: boolean;
  /** Signals sent to the trainer's process group, in order. */
  signalsSent: string[];
  durationMs: number;
  logFile: string;
}

/** A protocol event is small; a longer stdout line is logged cut, not parsed. */
const MAX_EVENT_CHARS = 64 * 1024;

/** Spawns a trainer (argument array, no shell) in its own process group and follows the JSON-lines protocol. */
export async function runTrainer(opts: RunTrainerOptions): Promise<TrainerOutcome> {
  fs.mkdirSync(path.dirname(opts.logFile), { recursive: true });
  const log = fs.createWriteStream(opts.logFile, { flags: 'a' });
  const write = (line: string) => log.write(`${line}\n`);
  const started = Date.now();
  const keep = opts.keepSteps ?? 1000;
  const o: TrainerOutcome = {
    status: 'failed',
    exitCode: null,
    signal: null,
    steps: [],
    stepCount: 0,
    timedOut: false,
    signalsSent: [],
    durationMs: 0,
    logFile: opts.logFile,
  };
  const stderrTail = new LineTail(50);
  let errorEvent: string | undefined;
  let handlerError: string | undefined;
  write(`# ${new Date().toISOString()} $ ${[opts.command, ...opts.args].join(' ')}`);
  if (opts.signal?.aborted)
    return finish(o, log, { status: 'interrupted', error: 'interrupted before the trainer started' }, started);

  const child = execa(opts.command, opts.args, {
    env: opts.env,
    cwd: opts.cwd,
    reject: false,
    buffer: false,
    stdin: 'ignore',
    detached: true,
    cleanup: false,
  });
  if (child.pid) opts.onSpawn?.(child.pid);
  const profiled = trainerSpawned();
  const stopper = groupStopper(child.pid, opts.graceMs ?? 120_000, opts.killAfterMs ?? 10_000, (s) =>
    write(`# sent ${s} to the trainer`),
  );
  o.signalsSent = stopper.sent;
  const onAbort = () => stopper.stop();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const timer =
    opts.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          o.timedOut = true;
          write(`# timed out after ${opts.timeoutMs} ms; stopping the trainer`);
          stopper.stop();
        }, opts.timeoutMs);
  child.once('exit', () => {
    profiled.endedAt = performance.now();
    stopper.leaderExited();
  });

  // Step events are kept (up to keepSteps), so their lines get a tighter cap than log lines.
  const stdout = eachLine(
    child.stdout!,
    (line) => {
      const ev = parseTrainerEvent(line);
      if (!ev) return write(`[stdout] ${line}`);
      if (ev.event === 'step') {
        trainerStepped(profiled);
        o.steps.push(ev);
        o.stepCount++;
        if (o.steps.length > keep) o.steps.shift();
      } else {
        write(`[event] ${JSON.stringify(ev)}`);
        if (ev.event === 'checkpoint') o.lastCheckpoint = ev;
        else if (ev.event === 'done') o.done = ev;
        else if (ev.event === 'error') errorEvent = ev.message;
      }
      try {
        opts.onEvent?.(ev);
      } catch (err) {
        handlerError ??= `recording the trainer's ${ev.event} event failed: ${errorMessage(err)}`;
        stopper.stop();
      }
    },
    MAX_EVENT_CHARS,
  );
  const stderr = eachLine(child.stderr!, (line) => {
    write(line);
    stderrTail.push(line);
  });
  const r = await child;
  await Promise.all([stdout, stderr]);
  await stopper.drained();
  clearTimeout(timer);
  opts.signal?.removeEventListener('abort', onAbort);
  stopper.dispose();
  if ((r as { code?: string }).code === 'ENOENT') {
    await finish(o, log, {}, started);
    throw new UserError(
      `trainer command not found: ${opts.command}`,
      'run `massgen-rl doctor --fix` to create the trainer environment',
    );
  }
  o.exitCode = r.exitCode ?? null;
  o.signal = r.signal ?? null;
  const crash =
    stderrTail
      .lines()
      .filter((l) => l.trim())
      .slice(-10)
      .join('\n') || (o.signal ? `killed by ${o.signal}` : `exit code ${o.exitCode}`);
  if (handlerError) return finish(o, log, { status: 'failed', error: handlerError }, started);
  if (o.exitCode === 0 && o.done) return finish(o, log, { status: 'completed' }, started);
  if (o.timedOut) {
    const saved = o.lastCheckpoint ? `; last checkpoint ${o.lastCheckpoint.path}` : '';
    return finish(
      o,
      log,
      { status: 'failed', error: `timed out after ${opts.timeoutMs} ms${saved}${errorEvent ? `: ${errorEvent}` : ''}` },
      started,
    );
  }
  if (opts.signal?.aborted || o.exitCode === 130) {
    // Stopped with a resumable checkpoint (exit 130; or announced, behind a launcher that exits its own way): no error.
    const clean = o.exitCode === 130 || o.lastCheckpoint !== undefined;
    return finish(o, log, { status: 'interrupted', error: clean ? errorEvent : (errorEvent ?? crash) }, started);
  }
  if (o.exitCode === 0)
    return finish(
      o,
      log,
      { status: 'failed', error: errorEvent ?? 'the trainer exited with code 0 without a done event' },
      started,
    );
  return finish(o, log, { status: 'failed', error: errorEvent ?? crash }, started);
}

async function finish(
  o: TrainerOutcome,
  log: fs.WriteStream,
  set: Partial<TrainerOutcome>,
  started: number,
): Promise<TrainerOutcome> {
  Object.assign(o, set, { durationMs: Date.now() - started });
  if (o.error === undefined) delete o.error;
  log.write(
    `# ${o.status}: exit code ${o.exitCode ?? '—'}${o.signal ? ` (${o.signal})` : ''} after ${o.durationMs} ms\n`,
  );
  await new Promise<void>((resolve) => log.end(resolve));
  return o;
}
