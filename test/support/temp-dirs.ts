import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const made: string[] = [];

/** A fresh temp dir, removed after the test; optional files (relative path → content) are written into it. */
export function tempDir(files: Record<string, string> = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'massgen-rl-test-'));
  made.push(dir);
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), content);
  }
  return dir;
}

/** Removes the dirs tempDir made; every tier runs it after each test (test/support/setup.ts).
 * MASSGEN_RL_KEEP_TEMP=1 keeps them for a post-mortem (their paths are in the failures' messages). */
export function removeTempDirs(): void {
  if (process.env.MASSGEN_RL_KEEP_TEMP === '1') return void made.splice(0);
  while (made.length) fs.rmSync(made.pop()!, { recursive: true, force: true });
}
