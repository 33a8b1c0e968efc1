import fs from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { UserError } from '../errors.js';

/** A file given as input (config, task file, prompt file) that is not something we can read as text. */
export class InputFileError extends UserError {
  constructor(
    readonly file: string,
    readonly code: string,
    readonly reason: string,
    what: string,
    hint?: string,
  ) {
    super(`${what} ${file}: ${reason}`, hint);
    this.name = 'InputFileError';
  }
}

export const MiB = 1024 * 1024;

/**
 * Reads a regular file as UTF-8 text. FIFOs, devices, sockets and directories (directly or through a
 * symlink) are refused before they are opened: reading a FIFO blocks until a writer comes, and /dev/zero
 * never ends. The open is non-blocking and re-checked on the descriptor, so a file swapped for a FIFO
 * after the check cannot hang us either. Files over `maxBytes` are refused instead of read. `inspect` sees
 * the text chunk by chunk as it is read, and may throw to stop reading there.
 */
export function readRegularFile(
  file: string,
  what: string,
  maxBytes = 16 * MiB,
  inspect?: (chunk: string) => void,
): string {
  const fail = (code: string, reason: string) => new InputFileError(file, code, reason, what);
  const check = (st: fs.Stats) => {
    if (!st.isFile()) throw fail(st.isDirectory() ? 'EISDIR' : 'ENOTREG', `${kindOf(st)}, not a regular file`);
    if (st.size > maxBytes) throw fail('EFBIG', `${size(st.size)}, over the limit of ${size(maxBytes)}`);
  };
  let fd: number;
  try {
    check(fs.statSync(file));
    fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
  } catch (err) {
    if (err instanceof InputFileError) throw err;
    throw errnoError(err, fail, file);
  }
  try {
    check(fs.fstatSync(fd));
    return inspect ? readInChunks(fd, inspect) : fs.readFileSync(fd, 'utf8');
  } catch (err) {
    if (err instanceof InputFileError || typeof (err as NodeJS.ErrnoException).code !== 'string') throw err;
    throw errnoError(err, fail);
  } finally {
    fs.closeSync(fd);
  }
}

/** The text of fd, shown to inspect chunk by chunk as it is read: inspect throws to stop reading. */
function readInChunks(fd: number, inspect: (chunk: string) => void): string {
  const buffer = Buffer.alloc(MiB);
  const decoder = new StringDecoder('utf8');
  const parts: string[] = [];
  for (let n; (n = fs.readSync(fd, buffer, 0, buffer.length, null)) > 0;) {
    const chunk = decoder.write(buffer.subarray(0, n));
    inspect(chunk);
    parts.push(chunk);
  }
  const rest = decoder.end();
  inspect(rest);
  parts.push(rest);
  return parts.join('');
}

/** Whether anything is at file, a link that leads nowhere included (existsSync follows links, and says no). */
export function present(file: string): boolean {
  try {
    fs.lstatSync(file);
    return true;
  } catch {
    return false;
  }
}

function errnoError(
  err: unknown,
  fail: (code: string, reason: string) => InputFileError,
  file?: string,
): InputFileError {
  const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
  if ((code === 'ENOENT' || code === 'ELOOP') && file !== undefined) {
    const target = linkTarget(file);
    if (target !== null) return fail('EBADLINK', `a link to ${target}, which leads nowhere (${code})`);
  }
  if (code === 'ENOENT') return fail(code, 'not found');
  if (code === 'ERR_STRING_TOO_LONG') return fail('EFBIG', 'too large to read as text');
  return fail(code, `cannot be read (${code})`);
}

/** What a symbolic link points to, or null when file is not a link. */
export function linkTarget(file: string): string | null {
  try {
    return fs.readlinkSync(file);
  } catch {
    return null;
  }
}

function size(bytes: number): string {
  return bytes >= MiB ? `${(bytes / MiB).toFixed(1)} MiB` : `${bytes} bytes`;
}

/** What a file that is not a regular file is, for messages: "a FIFO (named pipe)", "a character device", … */
export function kindOf(st: fs.Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return 'a special file';
}
