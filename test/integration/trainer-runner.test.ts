import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runTrainer, type TrainerEvent } from '../../src/trainers/runner.js';
import { FIXTURES, tempDir } from '../helpers.js';

const FAKE = path.join(FIXTURES, 'trainers', 'fake-trainer.mjs');

function fake(mode: string, extra: string[] = [], opts: Partial<Parameters<typeof runTrainer>[0]> = {}) {
  const dir = tempDir();
  const logFile = path.join(dir, 'logs', 'train.log');
  const events: TrainerEvent[] = [];
  const run = runTrainer({
    command: process.execPath,
    args: [FAKE, mode, '--out', path.join(dir, 'out'), ...extra],
    logFile,
    onEvent: (e) => events.push(e),
    ...opts,
  });
  return { dir, logFile, events, run, log: () => fs.readFileSync(logFile, 'utf8') };
}

/** Resolves once the fake has reported `n` steps (it is running and its signal handlers are in place). */
function afterSteps(events: TrainerEvent[], n: number): Promise<void> {
  return new Promise((resolve) => {
    const t = setInterval(() => {
      if (events.filter((e) => e.event === 'step').length >= n) {
        clearInterval(t);
        resolve();
      }
    }, 10);
  });
}

describe('runTrainer', () => {
  it('follows a normal run: typed steps, checkpoint and done; stderr goes to the log', async () => {
    const f = fake('normal', ['--steps', '4']);
    const o = await f.run;
    expect(o).toMatchObject({ status: 'completed', exitCode: 0, stepCount: 4, timedOut: false, signalsSent: [] });
    expect(o.error).toBeUndefined();
    expect(o.steps.map((s) => s.step)).toEqual([1, 2, 3, 4]);
    expect(o.steps[3]).toMatchObject({ event: 'step', total_steps: 4, loss: 0.25, kl: null, learning_rate: 1e-5 });
    expect(o.lastCheckpoint).toEqual({ event: 'checkpoint', path: path.join(f.dir, 'out', 'checkpoint-4'), step: 4 });
    expect(o.done).toEqual({
      event: 'done',
      path: path.join(f.dir, 'out', 'final'),
      metrics: { train_loss: 0.25, reward: 0.3 },
      adapter: true,
    });
    expect(f.events.map((e) => e.event)).toEqual(['progress', 'step', 'step', 'step', 'step', 'checkpoint', 'done']);
    expect(f.log()).toContain('loading weights from /models/base');
    expect(f.log()).toMatch(/# completed: exit code 0/);
  });

  it('keeps only the last N steps in the outcome but counts them all', async () => {
    const o = await fake('normal', ['--steps', '30'], { keepSteps: 5 }).run;
    expect(o.stepCount).toBe(30);
    expect(o.steps.map((s) => s.step)).toEqual([26, 27, 28, 29, 30]);
  });

  it('writes non-JSON and non-event stdout lines to the log instead of parsing them', async () => {
    const f = fake('garbage', ['--steps', '2']);
    const o = await f.run;
    expect(o.status).toBe('completed');
    expect(f.events.filter((e) => e.event === 'step')).toHaveLength(2);
    expect(f.log()).toContain('[stdout] Some library printed this');
    expect(f.log()).toContain('[stdout] {"not an event": true}');
    expect(f.log()).toContain('[stdout] {broken json');
  });

  it("reports a failed run with the error event's message", async () => {
    const o = await fake('error').run;
    expect(o).toMatchObject({ status: 'failed', exitCode: 1, error: 'out of memory at step 2', stepCount: 1 });
    const usage = await fake('usage').run;
    expect(usage).toMatchObject({ status: 'failed', exitCode: 2, error: 'config: learning_rate must be a number' });
  });

  it('reports a crash without an error event with the tail of stderr', async () => {
    const f = fake('crash');
    const o = await f.run;
    expect(o.status).toBe('failed');
    expect(o.exitCode).toBe(1);
    expect(o.error).toContain('Traceback (most recent call last):');
    expect(o.error).toMatch(/RuntimeError: tensor shapes do not match$/);
    expect(f.log()).toContain('RuntimeError: tensor shapes do not match');
  });

  it('fails a run that exits 0 without a done event', async () => {
    expect(await fake('exit0').run).toMatchObject({
      status: 'failed',
      exitCode: 0,
      error: 'the trainer exited with code 0 without a done event',
    });
  });

  it('forwards an abort as SIGINT and waits for the checkpoint: interrupted, with the last checkpoint', async () => {
    const controller = new AbortController();
    const f = fake('sigint', [], { signal: controller.signal });
    await afterSteps(f.events, 3);
    controller.abort();
    const o = await f.run;
    expect(o).toMatchObject({ status: 'interrupted', exitCode: 130, signalsSent: ['SIGINT'] });
    expect(o.error).toBeUndefined();
    expect(o.lastCheckpoint?.path).toBe(path.join(f.dir, 'out', `checkpoint-${o.lastCheckpoint!.step}`));
    expect(o.lastCheckpoint!.step).toBeGreaterThanOrEqual(3);
    expect(f.log()).toContain('SIGINT: saving a resumable checkpoint');
    expect(f.log()).toContain('# sent SIGINT to the trainer');
  });

  it("signals the trainer's whole process group (launcher workers stop too)", async () => {
    const controller = new AbortController();
    const marker = path.join(tempDir(), 'grandchild-signal');
    const f = fake('family', ['--marker', marker], { signal: controller.signal });
    await afterSteps(f.events, 3);
    while (!fs.existsSync(`${marker}.ready`)) await new Promise((r) => setTimeout(r, 10));
    controller.abort();
    expect((await f.run).status).toBe('interrupted');
    for (let i = 0; i < 50 && !fs.existsSync(marker); i++) await new Promise((r) => setTimeout(r, 20));
    expect(fs.readFileSync(marker, 'utf8')).toBe('SIGINT');
  });

  it('escalates to SIGTERM and SIGKILL when the trainer does not stop within the grace period', async () => {
    const controller = new AbortController();
    const f = fake('stubborn', [], { signal: controller.signal, graceMs: 200, killAfterMs: 200 });
    await afterSteps(f.events, 2);
    controller.abort();
    const o = await f.run;
    expect(o).toMatchObject({
      status: 'interrupted',
      exitCode: null,
      signal: 'SIGKILL',
      signalsSent: ['SIGINT', 'SIGTERM', 'SIGKILL'],
    });
    expect(o.error).toMatch(/ignoring SIGTERM/);
  });

  it('stops a trainer that runs past its timeout the graceful way and fails the run', async () => {
    // Long enough for the fake to be up (its SIGINT handler installed) even on a loaded machine.
    const f = fake('sigint', [], { timeoutMs: 2000 });
    const o = await f.run;
    expect(o).toMatchObject({ status: 'failed', exitCode: 130, timedOut: true, signalsSent: ['SIGINT'] });
    expect(o.error).toMatch(/^timed out after 2000 ms; last checkpoint .*checkpoint-\d+$/);
    expect(f.log()).toContain('# timed out after 2000 ms');
  });

  it('does not start when already aborted, and names a missing command', async () => {
    const controller = new AbortController();
    controller.abort();
    const o = await fake('normal', [], { signal: controller.signal }).run;
    expect(o).toMatchObject({ status: 'interrupted', exitCode: null, stepCount: 0 });
    const dir = tempDir();
    await expect(
      runTrainer({ command: path.join(dir, 'no-such-python'), args: [], logFile: path.join(dir, 'log') }),
    ).rejects.toThrow(/trainer command not found: .*no-such-python/);
  });

  it('fails the run and stops the trainer when recording an event throws', async () => {
    const f = fake('sigint', [], {
      onEvent: (e) => {
        if (e.event === 'step' && e.step === 2) throw new Error('database is locked');
      },
    });
    const o = await f.run;
    expect(o).toMatchObject({
      status: 'failed',
      exitCode: 130,
      error: "recording the trainer's step event failed: database is locked",
    });
  });
});
