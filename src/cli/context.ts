import type { LoadedConfig } from '../config/load.js';
import { Ui } from './ui/output.js';
import { colorEnabled } from './ui/colors.js';

export interface GlobalOptions {
  config?: string;
  json: boolean;
  verbose: boolean;
  yes: boolean;
  color: boolean;
  set: string[];
}

/** What every command handler receives: the global flags, the UI, and lazy config loading. */
export interface Context {
  opts: GlobalOptions;
  ui: Ui;
  interactive: boolean;
  loadConfig(): Promise<LoadedConfig>;
}

export function createContext(opts: GlobalOptions): Context {
  const interactive = Boolean(process.stdin.isTTY && process.stdout.isTTY) && process.env.CI !== 'true';
  const ui = new Ui({ json: opts.json, verbose: opts.verbose, color: colorEnabled(opts.color), interactive });
  let loaded: LoadedConfig | undefined;
  return {
    opts,
    ui,
    interactive,
    async loadConfig() {
      if (loaded) return loaded;
      const [{ loadConfig }, { redactorFor }] = await Promise.all([import('../config/load.js'), import('../pipeline/store.js')]);
      loaded = loadConfig({ configPath: opts.config, overrides: opts.set });
      ui.setRedactor(redactorFor(loaded.config, loaded.env));
      ui.debug(`config: ${loaded.file ?? '<embedded defaults>'} (hash ${loaded.hash})`);
      return loaded;
    },
  };
}
