import type { LoadedConfig } from '../config/load.js';
import type { Runtime } from '../runtime/runtime.js';
import { Redactor } from '../store/redact.js';
import { colorEnabled } from './ui/colors.js';
import { Ui } from './ui/output.js';

export interface GlobalOptions {
  config?: string;
  json: boolean;
  verbose: boolean;
  yes: boolean;
  color: boolean;
  set: string[];
}

/** What every command handler receives: the global flags, the UI, and the run's runtime, built on first use. */
export interface Context {
  opts: GlobalOptions;
  ui: Ui;
  interactive: boolean;
  loadConfig(): Promise<LoadedConfig>;
  /** The runtime of this command: built once, closed (servers stopped, store closed) when the command ends. */
  runtime(): Promise<Runtime>;
  close(): Promise<void>;
  /** A failure as the user should see it (a write refused by the store's lock: exit 2, naming the store). */
  explain(err: unknown): Promise<unknown>;
  /** What scrubs everything printed: the config's redactor (the store's), or the key formats without a config. */
  redactor(): Promise<Redactor>;
}

export function createContext(opts: GlobalOptions): Context {
  const interactive = Boolean(process.stdin.isTTY && process.stdout.isTTY) && process.env.CI !== 'true';
  const ui = new Ui({ json: opts.json, verbose: opts.verbose, color: colorEnabled(opts.color), interactive });
  let loaded: Promise<LoadedConfig> | undefined;
  let runtime: Promise<Runtime> | undefined;
  let redactor: Redactor | undefined;
  const loadConfig = () =>
    (loaded ??= (async () => {
      const [{ loadConfig: load }, { redactorFor }] = await Promise.all([
        import('../config/load.js'),
        import('../runtime/store.js'),
      ]);
      const result = load({ configPath: opts.config, overrides: opts.set });
      redactor = redactorFor(result.config, result.env);
      ui.setRedactor(redactor);
      ui.debug(`config: ${result.file ?? '<embedded defaults>'} (hash ${result.hash})`);
      for (const note of result.deprecations) ui.warn(`${result.file ?? 'config'}: ${note}`);
      return result;
    })());
  return {
    opts,
    ui,
    interactive,
    loadConfig,
    runtime: () =>
      (runtime ??= (async () => {
        const [config, { Runtime }] = await Promise.all([loadConfig(), import('../runtime/runtime.js')]);
        const rt = new Runtime(config, { onServerEvent: (e) => ui.debug(`[serve] ${JSON.stringify(e)}`) });
        ui.setRedactor(rt.redactor);
        return rt;
      })()),
    async close() {
      const rt = runtime && (await runtime.catch(() => undefined));
      await rt?.close();
    },
    async explain(err) {
      const rt = runtime && (await runtime.catch(() => undefined));
      return rt ? rt.explain(err) : err;
    },
    async redactor() {
      await loaded?.catch(() => undefined);
      return redactor ?? Redactor.fromSettings({ envNames: [], patterns: [], builtinPatterns: true });
    },
  };
}
