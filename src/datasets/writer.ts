import { createHash, randomBytes, type Hash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ensureDir } from '../store/database.js';
import type { GateResult } from './gates.js';
import type { DatasetStats } from './stats.js';
import type { Algo } from './types.js';

/** manifest.json of docs/trainer-protocol.md. */
export interface DatasetManifest {
  algo: Algo;
  /** sha256 (hex) of data.jsonl; the directory is <algo>-<first 12 digits>. */
  hash: string;
  rows: number;
  created_at: string;
  /** Rollout nums: exclusive `from`, inclusive `to`. */
  watermark: { from: number; to: number };
  /** Rollouts the rows came from. */
  rollouts: number;
  config_hash: string | null;
  stats: DatasetStats;
  gates: GateResult | null;
}

const FLUSH_BYTES = 1 << 20;

/**
 * Writes data.jsonl into a private temp directory under <data_dir>/datasets, hashing as it goes; commit()
 * adds manifest.json and renames the directory to <algo>-<hash12> in one step. When that directory
 * already exists (the same content was built before), it is reused as it is and the temp one removed.
 */
export class DatasetWriter {
  rows = 0;
  private readonly tmp: string;
  private readonly fd: number;
  private readonly hash: Hash = createHash('sha256');
  private buffer: string[] = [];
  private buffered = 0;

  constructor(
    private readonly root: string,
    private readonly algo: Algo,
  ) {
    ensureDir(root);
    removeStaleTemps(root);
    this.tmp = path.join(root, `.tmp-${algo}-${process.pid}-${randomBytes(4).toString('hex')}`);
    fs.mkdirSync(this.tmp);
    this.fd = fs.openSync(path.join(this.tmp, 'data.jsonl'), 'w');
  }

  write(row: unknown): void {
    const line = `${JSON.stringify(row)}\n`;
    this.rows++;
    this.buffer.push(line);
    this.buffered += line.length;
    if (this.buffered >= FLUSH_BYTES) this.flush();
  }

  commit(fields: Omit<DatasetManifest, 'algo' | 'hash' | 'rows' | 'created_at'>): {
    dir: string;
    manifest: DatasetManifest;
    reused: boolean;
  } {
    this.flush();
    fs.fsyncSync(this.fd);
    fs.closeSync(this.fd);
    const hash = this.hash.digest('hex');
    const dir = path.join(this.root, `${this.algo}-${hash.slice(0, 12)}`);
    const existing = readManifest(dir);
    if (existing) {
      this.discard();
      return { dir, manifest: existing, reused: true };
    }
    const manifest: DatasetManifest = {
      algo: this.algo,
      hash,
      rows: this.rows,
      created_at: new Date().toISOString(),
      ...fields,
    };
    fs.writeFileSync(path.join(this.tmp, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    fs.rmSync(dir, { recursive: true, force: true }); // a directory without a manifest is an interrupted copy
    try {
      fs.renameSync(this.tmp, dir);
    } catch (err) {
      const raced = readManifest(dir); // another build committed the same content first
      if (!raced) throw err;
      this.discard();
      return { dir, manifest: raced, reused: true };
    }
    return { dir, manifest, reused: false };
  }

  /** Removes the temp directory (after commit reused an existing one, or when the build failed). */
  discard(): void {
    try {
      fs.closeSync(this.fd);
    } catch {
      // already closed
    }
    fs.rmSync(this.tmp, { recursive: true, force: true });
  }

  private flush(): void {
    if (!this.buffer.length) return;
    const chunk = this.buffer.join('');
    this.buffer = [];
    this.buffered = 0;
    const bytes = Buffer.from(chunk, 'utf8');
    this.hash.update(bytes);
    for (let off = 0; off < bytes.length;) off += fs.writeSync(this.fd, bytes, off);
  }
}

export function readManifest(dir: string): DatasetManifest | null {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as DatasetManifest;
  } catch {
    return null;
  }
}

/** The folder datasets are built in, under a data directory. */
export const datasetsDir = (dataDir: string) => path.join(dataDir, 'datasets');

/**
 * Temp directories of builds whose process is gone (crashed or killed). A build sweeps them before it starts, and
 * so does every cycle: a cycle that builds nothing (its training skipped) must not keep a dead one's forever.
 */
export function removeStaleTemps(root: string): void {
  if (!fs.existsSync(root)) return;
  for (const name of fs.readdirSync(root)) {
    const pid = /^\.tmp-[a-z]+-(\d+)-[0-9a-f]+$/.exec(name)?.[1];
    if (pid && !alive(Number(pid))) fs.rmSync(path.join(root, name), { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
