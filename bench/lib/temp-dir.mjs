import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const live = new Set();

/** A fresh directory under os.tmpdir(); removed by removeTempDir, or at exit if the benchmark dies first. */
export function makeTempDir(label) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `massgen-bench-${label}-`));
  if (!live.size) registerExitCleanup();
  live.add(dir);
  return dir;
}

export function removeTempDir(dir) {
  fs.rmSync(dir, { recursive: true, force: true });
  live.delete(dir);
}

/** Bytes of a SQLite file plus its WAL. */
export function storeBytes(file) {
  return [file, `${file}-wal`].reduce((sum, f) => sum + (fs.existsSync(f) ? fs.statSync(f).size : 0), 0);
}

let registered = false;
function registerExitCleanup() {
  if (registered) return;
  registered = true;
  process.on('exit', () => {
    for (const dir of live) fs.rmSync(dir, { recursive: true, force: true });
  });
  process.once('SIGINT', () => process.exit(130));
  process.once('SIGTERM', () => process.exit(143));
}
