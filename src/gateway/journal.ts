import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HOST, pidAlive } from '../store/process-owner.js';
import type { Redactor } from '../store/redact.js';
import type { CapturedCall } from './call-span.js';

/** A captured call as its journal line holds it: the call, and of its session what its rollout needs. */
export interface JournalEntry extends Omit<CapturedCall, 'session'> {
  session: { rolloutId: string; key: string; metadata: Record<string, unknown> };
}

const NAME = /^capture-(.+)-(\d+)-(\d+)-(\d+)\.jsonl$/;
/** This host's name as journal file names hold it. */
const HOST_TAG = HOST.replace(/[^\w.]/g, '_');

/**
 * Every captured call, appended (redacted) to a local file before its response ends, so a gateway killed
 * before its batch reached the store loses no call a client got: the next gateway on this data directory
 * writes what a dead one left (recoverJournals). The calls that complete in one turn of the event loop go
 * in one write (a write per call cost more than the rest of the journal), each response held until then.
 * The file is cut into segments, one per batch write: a segment is deleted once the write that started
 * after it has committed. A segment the disk refused (full) is closed there, its whole lines kept, and the
 * calls go on in a segment on the spare file system (fallbackJournalDir), which a kill of the gateway does
 * not lose either: the store, on the full disk too, may refuse the batch.
 */
export class CaptureJournal {
  private fd = -1;
  private file = '';
  private seq = 0;
  private lines = 0;
  private readonly done: string[] = [];
  private readonly prefix: string;
  private readonly spare: string;
  /** Calls neither file system took: only the store's next write keeps them. */
  unjournaled = 0;
  /** Lines not written yet, and the responses that end once they are. */
  private pending: string[] = [];
  private waiting: (() => void)[] = [];
  private scheduled = false;

  constructor(
    private readonly dir: string,
    private readonly redactor: Redactor,
    private readonly onError?: (err: unknown) => void,
  ) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.prefix = `capture-${HOST_TAG}-${process.pid}-${Date.now()}`;
    this.spare = fallbackJournalDir(dir);
    this.openSegment();
  }

  /** Appends the call with the others of this turn of the event loop; `written` runs once it is in the file. */
  append(call: CapturedCall, written?: () => void): void {
    const { session, ...rest } = call;
    const entry: JournalEntry = {
      ...rest,
      session: { rolloutId: session.rolloutId, key: session.key, metadata: session.metadata },
    };
    this.pending.push(`${this.redactor.stringify(entry)}\n`);
    if (written) this.waiting.push(written);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.sync());
    }
  }

  /**
   * Writes the lines appended so far, then lets their responses end. A write that fails ends them too: the
   * calls are still stored with their batch, only a kill before that would lose them.
   */
  sync(): void {
    this.scheduled = false;
    const lines = this.pending;
    const waiting = this.waiting;
    this.pending = [];
    this.waiting = [];
    if (lines.length) this.write(Buffer.from(lines.join('')), lines.length);
    for (const done of waiting) {
      try {
        done();
      } catch (err) {
        this.onError?.(err); // one response that cannot end holds back none of the others
      }
    }
  }

  /** Starts a new segment (when the current one holds anything): the ones before it go with the write starting now. */
  rotate(): string[] {
    this.sync();
    if (this.lines) {
      this.retire();
      try {
        this.openSegment();
      } catch (err) {
        this.onError?.(err); // neither file system takes a file now: the next write tries again
      }
    }
    return [...this.done];
  }

  /** The calls of these segments are in the store. */
  committed(segments: readonly string[]): void {
    for (const file of segments) {
      fs.rmSync(file, { force: true });
      this.done.splice(this.done.indexOf(file), 1);
    }
  }

  /** After the last write: an empty segment goes; one holding calls the store refused stays, for recovery. */
  close(): void {
    this.sync();
    if (this.fd < 0) return;
    fs.closeSync(this.fd);
    if (!this.lines) fs.rmSync(this.file, { force: true });
  }

  /**
   * Appends to the segment (opening one when there is none); when its disk refuses, the segment is retired and the
   * lines go to a new segment on the spare file system; when that refuses too, they are counted as unjournaled.
   */
  private write(bytes: Buffer, lines: number): void {
    for (const dirs of [undefined, [this.spare]]) {
      try {
        if (dirs || this.fd < 0) this.openSegment(dirs);
        writeAll(this.fd, bytes);
        this.lines += lines;
        return;
      } catch (err) {
        this.onError?.(err);
        this.retire();
      }
    }
    this.unjournaled += lines;
  }

  /**
   * Closes the segment for good: it goes with the next batch write. One a write failed in may end in a line cut
   * short, which recovery leaves out (readJournal); its whole lines are recovered.
   */
  private retire(): void {
    if (this.fd < 0) return;
    fs.closeSync(this.fd);
    this.done.push(this.file);
    this.fd = -1;
  }

  /** A new segment in the first of `dirs` that takes one: the journal's own folder, else the spare. */
  private openSegment(dirs = [this.dir, this.spare]): void {
    const name = `${this.prefix}-${this.seq++}.jsonl`;
    let refused: unknown;
    for (const dir of dirs) {
      try {
        if (dir === this.spare) fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
        this.fd = fs.openSync(path.join(dir, name), 'a', 0o600);
        this.file = path.join(dir, name);
        this.lines = 0;
        return;
      } catch (err) {
        refused = err;
      }
    }
    throw refused;
  }
}

/**
 * Where a journal's segments go while its own disk refuses them: a folder for this data directory on another file
 * system, RAM-backed where the machine has one (/dev/shm), which outlives a killed gateway but not a reboot.
 */
export function fallbackJournalDir(dir: string): string {
  const root = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
  const key = createHash('sha256').update(path.resolve(dir)).digest('hex').slice(0, 16);
  return path.join(root, `massgen-rl-journal-${key}`);
}

function writeAll(fd: number, bytes: Buffer): void {
  for (let at = 0; at < bytes.length;) at += fs.writeSync(fd, bytes, at);
}

/** Journal files left by gateways of this host that are no longer running, oldest first. */
export function orphanedJournals(dir: string): string[] {
  const files = [dir, fallbackJournalDir(dir)].flatMap((d) => {
    try {
      return fs.readdirSync(d).map((name) => ({ file: path.join(d, name), m: NAME.exec(name) }));
    } catch {
      return [];
    }
  });
  return files
    .filter(({ m }) => m && m[1] === HOST_TAG && !pidAlive(Number(m[2])))
    .sort((a, b) => Number(a.m![3]) - Number(b.m![3]) || Number(a.m![4]) - Number(b.m![4]))
    .map(({ file }) => file);
}

/** A journal file's entries; a last line cut short by the kill is left out. */
export function readJournal(file: string): { entries: JournalEntry[]; skipped: number } {
  const entries: JournalEntry[] = [];
  let skipped = 0;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    try {
      entries.push(JSON.parse(line) as JournalEntry);
    } catch {
      skipped++;
    }
  }
  return { entries, skipped };
}
