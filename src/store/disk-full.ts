import fs from 'node:fs';
import path from 'node:path';
import { DiskFullError } from '../errors.js';

/** Below this much room a write that failed with an I/O error failed for want of room. */
const NO_ROOM_BYTES = 1 << 20;

/**
 * err as a DiskFullError when a store write found the disk full: SQLITE_FULL and ENOSPC say so, and SQLite reports
 * some of the same failures (the WAL's shared-memory file that cannot grow, at open) as a plain I/O error, which is
 * taken for a full disk when the store's file system has (almost) no room left. undefined otherwise.
 */
export function diskFull(err: unknown, file: string): DiskFullError | undefined {
  if (isDiskFull(err) || (ioError(err) && noRoom(file))) return new DiskFullError(`the store ${file}`, err);
  return undefined;
}

/** The disk ran out of room under a write: ENOSPC, SQLite's SQLITE_FULL, PostgreSQL's disk_full (53100). */
function isDiskFull(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ENOSPC' || code === 'SQLITE_FULL' || code === '53100';
}

function ioError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_IOERR');
}

function noRoom(file: string): boolean {
  try {
    const s = fs.statfsSync(path.dirname(file));
    return s.bavail * s.bsize < NO_ROOM_BYTES;
  } catch {
    return false; // a PostgreSQL URL, or a directory gone
  }
}
