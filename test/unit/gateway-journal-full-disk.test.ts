import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { CapturedCall } from '../../src/gateway/call-span.js';
import { CaptureJournal, fallbackJournalDir, readJournal } from '../../src/gateway/journal.js';
import { Redactor } from '../../src/store/redact.js';
import { tempDir } from '../helpers.js';

const call = (callId: string) =>
  ({
    callId,
    session: { rolloutId: 'ro_1', key: 's', metadata: {} },
    agent: null,
    client: '127.0.0.1',
    startedAt: 0,
    latencyMs: 1,
    request: {},
    backend: { name: 'm', model: 'm' },
    stream: false,
    forwarded: {},
  }) as unknown as CapturedCall;

const ids = (files: string[]) => files.flatMap((f) => readJournal(f).entries.map((e) => e.callId));

afterEach(() => vi.restoreAllMocks());

describe('the capture journal on a full disk', () => {
  it('keeps the calls its own disk refuses in a segment on the spare file system, and goes back once there is room', () => {
    const dir = path.join(tempDir({}), 'gateway');
    const spare = fallbackJournalDir(dir);
    const errors: unknown[] = [];
    const journal = new CaptureJournal(dir, new Redactor([], []), (e) => errors.push(e));
    journal.append(call('c1'));
    journal.sync();
    // the disk fills: the write into the journal's own folder is refused, after writing part of its bytes
    const write = fs.writeSync.bind(fs);
    const full = vi.spyOn(fs, 'writeSync').mockImplementation(((fd: number, buf: Buffer, off?: number) => {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir)) {
        write(fd, buf, off ?? 0, 5);
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      }
      return write(fd, buf, off ?? 0);
    }) as typeof fs.writeSync);
    let ended = 0;
    journal.append(call('c2'), () => ended++);
    journal.append(call('c3'), () => ended++);
    journal.sync();
    expect(ended).toBe(2);
    expect(errors.map(String)).toEqual(['Error: ENOSPC: no space left on device, write']);
    full.mockRestore();
    // the next batch write: every call so far is in a segment it hands over, the cut line left out
    const segments = journal.rotate();
    expect(segments.some((f) => f.startsWith(spare))).toBe(true);
    expect(ids(segments)).toEqual(['c1', 'c2', 'c3']);
    expect(journal.unjournaled).toBe(0);
    // room again: the next segment is in the journal's own folder
    journal.append(call('c4'));
    const next = journal.rotate();
    expect(next.at(-1)!.startsWith(dir)).toBe(true);
    expect(ids(next.slice(segments.length))).toEqual(['c4']);
    journal.committed(next);
    journal.close();
    expect(fs.readdirSync(spare)).toEqual([]);
  });

  it('answers and counts the calls when neither file system takes them, and journals again once one does', () => {
    const dir = path.join(tempDir({}), 'gateway');
    const errors: unknown[] = [];
    const journal = new CaptureJournal(dir, new Redactor([], []), (e) => errors.push(e));
    const enospc = () => Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    const full = [
      vi.spyOn(fs, 'writeSync').mockImplementation(() => {
        throw enospc();
      }),
      vi.spyOn(fs, 'openSync').mockImplementation(() => {
        throw enospc();
      }),
    ];
    let ended = 0;
    journal.append(call('c1'), () => ended++);
    journal.sync();
    journal.append(call('c2'), () => ended++);
    journal.sync();
    const during = journal.rotate();
    expect(ended).toBe(2);
    expect(journal.unjournaled).toBe(2);
    expect(errors.length).toBeGreaterThan(0);
    for (const f of full) f.mockRestore();
    // room again: the next call is journaled, in a segment the next batch write hands over
    journal.append(call('c3'));
    const after = journal.rotate();
    expect(ids(after.slice(during.length))).toEqual(['c3']);
    expect(journal.unjournaled).toBe(2);
    journal.committed(after);
    journal.close();
  });
});
