/** The field types the sections build on: names, counts, timeouts, paths, hosts. */
import { z } from 'zod';

export const name = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'use letters, digits, "_", "." or "-" (starting with a letter or digit)');
export const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name');
export const hostName = z
  .string()
  .regex(/^[A-Za-z0-9:]([A-Za-z0-9.:-]*[A-Za-z0-9])?$/, 'a host name or an IP address, e.g. 10.0.0.1');
export const posInt = z.int().positive();
export const nonNegInt = z.int().nonnegative();

// Every number has a ceiling: Node fires timers of 2^31 ms or more after 1 ms, and counts drive allocations.
export const HOUR_S = 3600;
export const DAY_S = 24 * HOUR_S;
export const WEEK_S = 7 * DAY_S;
/** A timeout in milliseconds, at most `maxS` seconds. */
export const timeoutMs = (maxS = DAY_S) =>
  posInt.max(maxS * 1000, `at most ${maxS * 1000} ms (${describeSeconds(maxS)})`);
export const timeoutS = (maxS = DAY_S) =>
  z
    .number()
    .positive()
    .max(maxS, `at most ${maxS} s (${describeSeconds(maxS)})`);
export const count = (max: number) => posInt.max(max);
export const retries = nonNegInt.max(100);
/** A reward amount or coefficient. */
export const amount = z.number().min(-1e6).max(1e6);
export const seed = z
  .int()
  .min(0)
  .max(2 ** 32 - 1, 'at most 4294967295 (a 32-bit seed)');
/** The longest path (PATH_MAX, in characters here) and name in a path (NAME_MAX, in bytes) Linux takes. */
const PATH_MAX = 4096;
const NAME_MAX = 255;
/**
 * A file or directory path: one the file system can take, or the field is named here, instead of a
 * store path derived from it failing later (or a directory named with U+FFFD being created).
 */
export const filePath = () =>
  z
    .string()
    .min(1)
    .superRefine((p, ctx) => {
      const problem = pathProblem(p);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    });

function pathProblem(p: string): string | undefined {
  if (p.length > PATH_MAX) return `at most ${PATH_MAX} characters (the longest path the system takes), got ${p.length}`;
  if (p.includes('\0')) return 'must not contain a NUL character';
  if (/\p{Cs}/u.test(p)) return 'must not contain a lone surrogate (half of a UTF-16 pair, not valid Unicode)';
  const long = p.split(/[\\/]/).find((part) => Buffer.byteLength(part) > NAME_MAX);
  const bytes = long === undefined ? 0 : Buffer.byteLength(long);
  return long && `"${long.slice(0, 8)}…" is ${bytes} bytes: a name in a path is at most ${NAME_MAX}`;
}

export const MAX_TASKS = 100_000;
export const MAX_CONCURRENCY = 256;
export const MAX_STEPS = 10_000_000;

function describeSeconds(s: number): string {
  return s % WEEK_S === 0
    ? `${s / WEEK_S} week${s === WEEK_S ? '' : 's'}`
    : s % DAY_S === 0
      ? `${s / DAY_S} day${s === DAY_S ? '' : 's'}`
      : `${s / HOUR_S} hours`;
}
