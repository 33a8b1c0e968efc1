import type { LoadedConfig } from '../config/load.js';
import type { RLConfig } from '../config/schema.js';
import { Redactor, Store } from '../store/index.js';

/** Secrets to scrub: every model's api_key_env value, privacy.redact_env values and patterns. */
export function redactorFor(config: RLConfig, env: NodeJS.ProcessEnv = process.env): Redactor {
  const keyEnvs = Object.values(config.models).map((m) => m.api_key_env).filter((n): n is string => Boolean(n));
  return Redactor.fromSettings(
    { envNames: [...keyEnvs, ...config.privacy.redact_env], patterns: config.privacy.redact_patterns, builtinPatterns: config.privacy.builtin_patterns },
    env,
  );
}

export function openStore(loaded: LoadedConfig, opts: { mustExist?: boolean } = {}): Store {
  return Store.open({
    path: loaded.paths.storePath,
    busyTimeoutMs: loaded.config.store.busy_timeout_ms,
    redactor: redactorFor(loaded.config, loaded.env),
    mustExist: opts.mustExist,
  });
}

/** Opens the store for the duration of fn and always closes it. */
export async function withStore<T>(loaded: LoadedConfig, fn: (store: Store) => T | Promise<T>, opts: { mustExist?: boolean } = {}): Promise<T> {
  const store = openStore(loaded, opts);
  try {
    return await fn(store);
  } finally {
    store.close();
  }
}
