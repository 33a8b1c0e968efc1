import cron from 'node-cron';
import { UserError } from '../errors.js';

export interface Schedule {
  /** When the next cycle starts, or null when the schedule has no further run. */
  next(): Date | null;
  stop(): Promise<void>;
}

/** A UserError naming loop.schedule when node-cron cannot read the expression. */
export function checkSchedule(expression: string): void {
  const v = cron.validateDetailed(expression);
  if (!v.valid)
    throw new UserError(
      `loop.schedule "${expression}": ${v.errors.map((e) => `${e.field}: ${e.message}`).join('; ') || 'not a cron expression'}`,
    );
}

/** The next start times of a schedule, without starting anything. */
export function nextRuns(expression: string, count: number): Date[] {
  checkSchedule(expression);
  const task = cron.createTask(expression, () => undefined);
  try {
    return task.getNextRuns(count);
  } finally {
    void task.destroy();
  }
}

/**
 * Runs tick on the schedule in this process; a tick that comes while the previous one still runs is
 * skipped (the next cycle starts at the next scheduled time).
 */
export function startSchedule(expression: string, tick: () => Promise<void>, onSkip?: (at: Date) => void): Schedule {
  checkSchedule(expression);
  const task = cron.schedule(expression, tick, { noOverlap: true, name: 'massgen-rl loop' });
  if (onSkip) task.on('execution:overlap', (c) => onSkip(c.date));
  return { next: () => task.getNextRun(), stop: async () => void (await task.destroy()) };
}
