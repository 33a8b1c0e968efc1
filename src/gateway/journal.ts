import fs from 'node:fs';
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
 * after it has committed.
 */
export class CaptureJournal {
  private fd = -1;
  private file = '';
  private seq = 0;
  private lines = 0;
  private readonly done: string[] = [];
  private readonly prefix: string;
  /** Lines not written yet, and the responses that end once they are. */
  private pending: string[] = [];
  private waiting: (() => void)[] = [];
  private scheduled = false;

  constructor(
    dir: string,
    private readonly redactor: Redactor,
    private readonly onError?: (err: unknown) => void,
  ) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.prefix = path.join(dir, `capture-${HOST_TAG}-${process.pid}-${Date.now()}`);
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
    this.lines++;
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
    try {
      if (lines.length) writeAll(this.fd, Buffer.from(lines.join('')));
    } catch (err) {
      this.onError?.(err);
    }
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
      fs.closeSync(this.fd);
      this.done.push(this.file);
      this.openSegment();
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
    fs.closeSync(this.fd);
    if (!this.lines) fs.rmSync(this.file, { force: true });
  }

  private openSegment(): void {
    this.file = `${this.prefix}-${this.seq++}.jsonl`;
    this.fd = fs.openSync(this.file, 'a', 0o600);
    this.lines = 0;
  }
}

function writeAll(fd: number, bytes: Buffer): void {
  for (let at = 0; at < bytes.length;) at += fs.writeSync(fd, bytes, at);
}

/** Journal files left by gateways of this host that are no longer running, oldest first. */
export function orphanedJournals(dir: string): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .map((name) => ({ name, m: NAME.exec(name) }))
    .filter(({ m }) => m && m[1] === HOST_TAG && !pidAlive(Number(m[2])))
    .sort((a, b) => Number(a.m![3]) - Number(b.m![3]) || Number(a.m![4]) - Number(b.m![4]))
    .map(({ name }) => path.join(dir, name));
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
