import fs from 'node:fs';
import path from 'node:path';
import { HOST, pidAlive } from '../store/process-owner.js';

/** What a running local model server serves, as `<data_dir>/servers/<pid>.json` records it. */
export interface ServerEntry {
  /** OpenAI-compatible base URL, http://host:port/v1 */
  base_url: string;
  /** The config model it serves (the key under `models`). */
  model: string;
  /** The model name clients send. */
  served_name: string;
  weights: {
    /** The weights the served name gives: a model folder, or a LoRA adapter folder. */
    dir: string;
    adapter: boolean;
    /** The base model folder the server runs on, for an adapter. */
    base_dir: string | null;
    resource: { id: string; name: string; version: number } | null;
  };
  /** The server process. */
  pid: number;
  started_at: string;
  host: string;
  /** transformers (swaps adapters at runtime) or vllm. */
  backend: string;
  /** A deploy switches it to the new production weights (`serve` of a config model's own weights); a run's own servers stay. */
  follows_production: boolean;
  /** The massgen-rl process that started it. */
  owner_pid: number;
}

export const SERVERS_DIR = 'servers';

const dirOf = (dataDir: string) => path.join(dataDir, SERVERS_DIR);

/** Records a started server (temp file + rename: readers never see half an entry); returns its file. */
export function registerServer(dataDir: string, entry: ServerEntry): string {
  const file = path.join(dirOf(dataDir), `${entry.pid}.json`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, `${JSON.stringify(entry, null, 2)}\n`);
  fs.renameSync(tmp, file);
  return file;
}

/** Rewrites a server's entry (after a swap), unless it was removed meanwhile (the server stopped). */
export function updateServer(dataDir: string, entry: ServerEntry): void {
  if (fs.existsSync(path.join(dirOf(dataDir), `${entry.pid}.json`))) registerServer(dataDir, entry);
}

export function unregisterServer(file: string): void {
  try {
    fs.rmSync(file, { force: true });
  } catch {
    // best effort: liveServers removes an entry whose process is gone anyway
  }
}

/**
 * The servers of this host that are running, oldest first. Entries of a process that no longer exists
 * are removed; entries of other hosts sharing the data dir are left alone and not returned (their
 * addresses mean nothing here).
 */
export function liveServers(dataDir: string): ServerEntry[] {
  let names: string[];
  try {
    names = fs.readdirSync(dirOf(dataDir));
  } catch {
    return [];
  }
  const live: ServerEntry[] = [];
  for (const name of names) {
    const pid = /^(\d+)\.json$/.exec(name)?.[1];
    if (!pid) continue;
    const file = path.join(dirOf(dataDir), name);
    const entry = readEntry(file);
    if (entry && entry.host !== HOST) continue;
    if (!pidAlive(entry?.pid ?? Number(pid))) {
      unregisterServer(file);
      continue;
    }
    if (entry) live.push(entry);
  }
  return live.sort((a, b) => a.started_at.localeCompare(b.started_at));
}

function readEntry(file: string): ServerEntry | undefined {
  try {
    const e = JSON.parse(fs.readFileSync(file, 'utf8')) as ServerEntry;
    const ok =
      e
      && typeof e === 'object'
      && typeof e.base_url === 'string'
      && typeof e.model === 'string'
      && typeof e.served_name === 'string'
      && Number.isInteger(e.pid)
      && typeof e.host === 'string'
      && typeof e.started_at === 'string'
      && typeof e.weights?.dir === 'string';
    return ok ? e : undefined;
  } catch {
    return undefined;
  }
}
