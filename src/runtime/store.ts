import type { LoadedConfig } from '../config/load.js';
import type { RLConfig } from '../config/schema.js';
import { Redactor, Store, type StoreOptions } from '../store/index.js';

/** Secrets to scrub: every model's api_key_env value, the gateway's client keys, privacy.redact_env values and patterns. */
export function redactorFor(config: RLConfig, env: NodeJS.ProcessEnv = process.env): Redactor {
  const keyEnvs = Object.values(config.models)
    .map((m) => m.api_key_env)
    .filter((n): n is string => Boolean(n));
  return Redactor.fromSettings(
    {
      envNames: [...keyEnvs, ...config.gateway.api_keys_env, ...config.privacy.redact_env],
      patterns: config.privacy.redact_patterns,
      builtinPatterns: config.privacy.builtin_patterns,
    },
    env,
  );
}

/** Where the configured store is and how to reach it: what another thread needs to open it too. */
export function storeOptions(loaded: LoadedConfig): Omit<StoreOptions, 'redactor'> {
  return {
    path: loaded.paths.storePath,
    busyTimeoutMs: loaded.config.store.busy_timeout_ms,
    passwordEnv: loaded.config.store.password_env,
  };
}

/** Opens the configured store (creating it unless mustExist); the caller closes it. */
export function openStore(loaded: LoadedConfig, opts: { mustExist?: boolean; redactor?: Redactor } = {}): Store {
  return Store.open({
    ...storeOptions(loaded),
    redactor: opts.redactor ?? redactorFor(loaded.config, loaded.env),
    mustExist: opts.mustExist,
  });
}
