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
 * Every captured call, appended (redacted) to a local file the moment its response is complete, so a
 * gateway killed before its batch reached the store loses none: the next gateway on this data directory
 * writes what a dead one left (recoverJournals). The file is cut into segments, one per batch write: a
 * segment is deleted once the write that started after it has committed.
 */
export class CaptureJournal {
  private fd = -1;
  private file = '';
  private seq = 0;
  private lines = 0;
  private readonly done: string[] = [];
  private readonly prefix: string;

  constructor(
    dir: string,
    private readonly redactor: Redactor,
  ) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.prefix = path.join(dir, `capture-${HOST_TAG}-${process.pid}-${Date.now()}`);
    this.openSegment();
  }

  append(call: CapturedCall): void {
    const { session, ...rest } = call;
    const entry: JournalEntry = {
      ...rest,
      session: { rolloutId: session.rolloutId, key: session.key, metadata: session.metadata },
    };
    fs.writeSync(this.fd, `${this.redactor.stringify(entry)}\n`);
    this.lines++;
  }

  /** Starts a new segment (when the current one holds anything): the ones before it go with the write starting now. */
  rotate(): string[] {
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
    fs.closeSync(this.fd);
    if (!this.lines) fs.rmSync(this.file, { force: true });
  }

  private openSegment(): void {
    this.file = `${this.prefix}-${this.seq++}.jsonl`;
    this.fd = fs.openSync(this.file, 'a', 0o600);
    this.lines = 0;
  }
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
