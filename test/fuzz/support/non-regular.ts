import fc from 'fast-check';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseMassgenLogs } from '../../../src/interop/massgen/import.js';
import { FIXTURES } from '../../helpers.js';

/** A non-regular file where the CLI expects an input file. */
export interface SpecialCase {
  position: 'config' | 'config-flag' | 'task-config' | 'task-flag' | 'prompt' | 'massgen';
  kind: 'fifo' | 'link-fifo' | 'device' | 'directory' | 'loop' | 'dangling';
  /** Which MassGen file, and /dev/zero or /dev/null for a device. */
  pick: number;
}

export const specialCaseArb: fc.Arbitrary<SpecialCase> = fc.record({
  position: fc.constantFrom('config', 'config-flag', 'task-config', 'task-flag', 'prompt', 'massgen'),
  kind: fc.constantFrom('fifo', 'link-fifo', 'device', 'directory', 'loop', 'dangling'),
  pick: fc.nat(),
});

/** Puts a special file of `kind` at `file` (its parent exists); FIFOs a link points to live in dir/.specials. */
export function makeSpecial(dir: string, file: string, c: SpecialCase): void {
  fs.rmSync(file, { force: true });
  switch (c.kind) {
    case 'fifo':
      return void execFileSync('mkfifo', [file]);
    case 'link-fifo': {
      const fifo = path.join(dir, '.specials', `fifo-${path.basename(file)}`);
      fs.mkdirSync(path.dirname(fifo), { recursive: true });
      execFileSync('mkfifo', [fifo]);
      return fs.symlinkSync(fifo, file);
    }
    case 'device':
      return fs.symlinkSync(c.pick % 2 ? '/dev/null' : '/dev/zero', file);
    case 'directory':
      return void fs.mkdirSync(file);
    case 'loop':
      fs.symlinkSync(`${path.basename(file)}.loop`, file);
      return fs.symlinkSync(path.basename(file), `${file}.loop`);
    case 'dangling':
      return fs.symlinkSync('moved-away', file);
  }
}

/** Copies both MassGen fixture sets into root. */
export function copyMassgenFixtures(root: string): void {
  for (const s of ['massgen-logs', 'massgen-real']) fs.cpSync(path.join(FIXTURES, s), root, { recursive: true });
}

/**
 * The fixture files the importer reads (relative to the logs root): those whose replacement by a FIFO
 * fails their unit. status.json, events.jsonl and the like are never opened, so nothing is expected of them.
 */
export function massgenFilesRead(scratch: string): string[] {
  const root = path.join(scratch, 'massgen_logs');
  copyMassgenFixtures(root);
  const files = (fs.readdirSync(root, { recursive: true }) as string[])
    .filter((f) => fs.statSync(path.join(root, f)).isFile())
    .sort();
  const read = files.filter((rel) => {
    const file = path.join(root, rel);
    fs.renameSync(file, `${file}.bak`);
    execFileSync('mkfifo', [file]);
    try {
      return parseMassgenLogs(root).failed.some((f) => f.message.includes(rel));
    } finally {
      fs.rmSync(file);
      fs.renameSync(`${file}.bak`, file);
    }
  });
  fs.rmSync(root, { recursive: true, force: true });
  return read;
}
