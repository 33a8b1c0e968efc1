import fs from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { UserError } from '../../errors.js';

const KINDS: [test: (s: fs.Stats) => boolean, what: string][] = [
  [(s) => s.isDirectory(), 'a directory'],
  [(s) => s.isFIFO(), 'a named pipe (FIFO)'],
  [(s) => s.isSocket(), 'a socket'],
  [(s) => s.isCharacterDevice() || s.isBlockDevice(), 'a device'],
];

/**
 * Writes an export to `out`, never leaving half an export where a good file was: the export goes to
 * a temporary file beside the target first. Then a new path is renamed into place, and an existing
 * regular file is written through (same inode, so its hard links, owner and mode stay).
 *
 * Anything else at the path is refused before anything is written: a directory, a FIFO, a socket, a
 * device (replacing one with a regular file would break whatever used it), and a symbolic link,
 * which could point the write anywhere (a link planted in a shared directory, followed by root);
 * `-o -` writes to stdout.
 */
export async function writeExportFile<T>(
  out: string,
  write: (stream: Writable) => Promise<T>,
): Promise<T & { file: string }> {
  const file = path.resolve(out);
  const existing = regularOrAbsent(file);
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}-${Date.now().toString(36)}.tmp`);
  let stream: fs.WriteStream;
  try {
    // wx: a fresh file, never something already at the temporary name (or a link placed there).
    stream = fs.createWriteStream(tmp, { flags: 'wx', highWaterMark: 1 << 20 });
    await new Promise<void>((resolve, reject) => stream.once('open', () => resolve()).once('error', reject));
  } catch (err) {
    throw cannotWrite(file, err, path.dirname(file));
  }
  try {
    let failure: unknown;
    stream.on('error', (err) => (failure ??= err));
    const result = await write(stream);
    await new Promise<void>((resolve, reject) =>
      stream.end((err?: Error | null) => (err || failure ? reject(err ?? failure) : resolve())),
    );
    if (existing) copyInto(tmp, file, existing);
    else fs.renameSync(tmp, file);
    return { ...result, file };
  } catch (err) {
    stream.destroy();
    throw isFsError(err) ? cannotWrite(file, err) : err;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

/** The target's stats when it is a regular file, undefined when nothing is there; a UserError for anything else. */
function regularOrAbsent(file: string): fs.Stats | undefined {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      if (!fs.existsSync(path.dirname(file)))
        throw new UserError(`cannot write ${file}: directory ${path.dirname(file)} does not exist`);
      return undefined;
    }
    throw cannotWrite(file, err);
  }
  if (stat.isFile()) return stat;
  if (stat.isSymbolicLink()) {
    const target = safeReadlink(file);
    throw new UserError(
      `refusing to write ${file}: it is a symbolic link${target ? ` (to ${target})` : ''}; exports are written only to regular files or new paths, so that a link cannot send the write somewhere else`,
      `pass the link's target${target ? ` (${path.resolve(path.dirname(file), target)})` : ''} as -o, or use -o - for stdout`,
    );
  }
  const what = KINDS.find(([test]) => test(stat))?.[1] ?? 'not a regular file';
  throw new UserError(
    `refusing to write ${file}: it is ${what}, not a regular file; nothing was written`,
    'name a regular file or a new path with -o, or use -o - for stdout',
  );
}

/** Writes tmp's bytes over the regular file `file` in place, after checking it is still the file inspected. */
function copyInto(tmp: string, file: string, expected: fs.Stats): void {
  const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  try {
    const now = fs.fstatSync(fd);
    if (!now.isFile() || now.ino !== expected.ino || now.dev !== expected.dev) {
      throw new UserError(`refusing to write ${file}: it was replaced while the export ran; nothing was written`);
    }
    const src = fs.openSync(tmp, 'r');
    try {
      const buf = Buffer.allocUnsafe(1 << 20);
      let pos = 0;
      for (let n; (n = fs.readSync(src, buf, 0, buf.length, pos)) > 0; pos += n) {
        for (let off = 0; off < n;) off += fs.writeSync(fd, buf, off, n - off, pos + off);
      }
      fs.ftruncateSync(fd, pos);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(src);
    }
  } finally {
    fs.closeSync(fd);
  }
}

function safeReadlink(file: string): string | undefined {
  try {
    return fs.readlinkSync(file);
  } catch {
    return undefined;
  }
}

function isFsError(err: unknown): boolean {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).syscall === 'string';
}

function cannotWrite(file: string, err: unknown, dir?: string): UserError {
  const code = (err as NodeJS.ErrnoException).code ?? String(err);
  return new UserError(`cannot write ${file}: ${code}${dir ? ` (a temporary file is written in ${dir} first)` : ''}`);
}
