import { sha256 } from '../util/hash.js';
import type { Split, SplitSelector, SplitTask, Task } from './types.js';

/**
 * Where an id falls in [0, 1): the first 52 bits of sha256(salt NUL id), which a double holds exactly.
 * The NUL keeps ("ab", "c") and ("a", "bc") apart. Changing this function reshuffles every split.
 */
export function splitPoint(id: string, salt: string): number {
  return parseInt(sha256(`${salt}\0${id}`).slice(0, 13), 16) / 2 ** 52;
}

/** The split of a task: eval when its point is below evalFraction, so 0 means all train and 1 all eval. */
export function splitOf(id: string, evalFraction: number, salt: string): Split {
  return splitPoint(id, salt) < evalFraction ? 'eval' : 'train';
}

/** Each task's split: eval when evalOnly says so (a held-out template), else by its id. */
export function withSplits(
  tasks: readonly Task[],
  evalFraction: number,
  salt: string,
  evalOnly: (task: Task) => boolean = () => false,
): SplitTask[] {
  return tasks.map((t) => ({ ...t, split: evalOnly(t) ? 'eval' : splitOf(t.id, evalFraction, salt) }));
}

/** The tasks of one split (or all), in their loaded order; the first n when n is given. */
export function selectTasks<T extends SplitTask>(tasks: readonly T[], split: SplitSelector, n?: number): T[] {
  if (n !== undefined && (!Number.isInteger(n) || n < 0))
    throw new RangeError(`n must be a non-negative integer, got ${n}`);
  const chosen = split === 'all' ? [...tasks] : tasks.filter((t) => t.split === split);
  return n === undefined ? chosen : chosen.slice(0, n);
}
