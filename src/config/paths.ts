import os from 'node:os';
import path from 'node:path';
import { DEFAULT_MODEL_NAME } from './defaults.js';
import type { RLConfig } from './schema.js';

/** Where shared, re-creatable things live (trainer venv, converted models): reused across projects. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.MASSGEN_RL_CACHE_DIR) return path.resolve(env.MASSGEN_RL_CACHE_DIR);
  const base = env.XDG_CACHE_HOME ? path.resolve(env.XDG_CACHE_HOME) : path.join(os.homedir(), '.cache');
  return path.join(base, 'massgen-rl');
}

export interface ResolvedPaths {
  baseDir: string;
  dataDir: string;
  /** The SQLite file, or the store.url of a PostgreSQL store. */
  storePath: string;
  cacheDir: string;
  venvDir: string;
  defaultModelDir: string;
}

export function resolvePaths(config: RLConfig, baseDir: string, env: NodeJS.ProcessEnv = process.env): ResolvedPaths {
  const dataDir = path.resolve(baseDir, config.project.data_dir);
  const cache = cacheDir(env);
  return {
    baseDir,
    dataDir,
    storePath:
      config.store.url
      ?? (config.store.path ? path.resolve(baseDir, config.store.path) : path.join(dataDir, 'store.sqlite')),
    cacheDir: cache,
    venvDir: config.train.venv ? path.resolve(baseDir, config.train.venv) : path.join(cache, 'venv'),
    defaultModelDir: path.join(cache, 'models', DEFAULT_MODEL_NAME),
  };
}
