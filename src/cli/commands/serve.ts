import { Option } from 'commander';
import { DEFAULT_SERVE_PORT, SERVE_ENGINES } from '../../config/schema.js';
import { UserError } from '../../errors.js';
import type { ServeEngine } from '../../pipeline/serve/serve.js';
import { portFlag } from '../flags.js';
import type { Register } from '../register.js';

interface ServeFlags {
  model?: string;
  weights?: string;
  set?: string;
  port?: number;
  host?: string;
  engine?: ServeEngine;
}

export const registerServe: Register = (program, ctx) => {
  program
    .command('serve')
    .description('serve local weights over an OpenAI-compatible API, in the foreground (Ctrl-C stops)')
    .option('--model <name>', 'the config model to serve (default: the first with local weights)')
    .option(
      '--weights <ref>',
      'builtin:<name>, resource:<name>[@version] or a model/adapter folder (overrides local.weights)',
    )
    .option(
      '--set <ref>',
      "serve this resource set's weights (set:N, vN) instead of production's, not following deploys",
    )
    .option(
      '--port <n>',
      `port to listen on; 0 picks a free one (default: local.port, else ${DEFAULT_SERVE_PORT})`,
      portFlag,
    )
    .option('--host <h>', 'address to listen on (default: local.host)')
    .addOption(
      new Option('--engine <name>', 'llama.cpp, transformers or vllm (default: local.engine, auto)').choices([
        ...SERVE_ENGINES,
      ]),
    )
    .action(async (flags: ServeFlags) => {
      const { ui, runtime } = ctx();
      const { serve } = await import('../../pipeline/serve/serve.js');
      const rt = await runtime();

      const stopRequested = new AbortController();
      const onSignal = () => stopRequested.abort();
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      try {
        const progress = ui.progress('starting the local model server');
        let served;
        try {
          served = await serve(rt, {
            model: flags.model,
            weights: flags.weights,
            set: flags.set,
            port: flags.port,
            host: flags.host,
            engine: flags.engine,
            signal: stopRequested.signal,
            onEvent: (e) => {
              if (e.event === 'progress') progress.update(String(e.message ?? e.stage));
              ui.debug(`[serve] ${JSON.stringify(e)}`);
            },
          });
        } catch (err) {
          if (stopRequested.signal.aborted) {
            progress.stop();
            ui.info('stopped before the server was ready');
            return;
          }
          progress.fail('the local model server did not start');
          throw err;
        }
        const ready = served.ready;
        progress.succeed(`serving ${served.model} (${String(ready.backend)} on ${String(ready.device)})`);
        const summary = {
          ok: true,
          baseUrl: served.baseUrl,
          model: served.model,
          modelName: served.modelName,
          pid: served.pid,
          backend: ready.backend,
          device: ready.device,
          weights: served.weights,
          adapters: served.adapters,
          logFile: served.logFile ?? null,
        };
        if (ui.opts.json) ui.json(summary);
        else {
          ui.print(served.baseUrl);
          ui.info(`model "${served.model}" from ${served.weights.ref} (${served.weights.dir})`);
          for (const a of served.adapters) ui.info(`model "${a.name}": the adapter ${a.weights}, loaded beside it`);
          if (served.logFile) ui.info(`log: ${served.logFile}`);
          ui.info('Ctrl-C stops the server');
        }

        const stopped = new Promise<'signal'>((resolve) => {
          if (stopRequested.signal.aborted) resolve('signal');
          stopRequested.signal.addEventListener('abort', () => resolve('signal'), { once: true });
        });
        const outcome = await Promise.race([stopped, served.exited.then((code) => ({ code }))]);
        if (outcome === 'signal') {
          await served.stop();
          ui.info('server stopped');
          return;
        }
        throw new UserError(
          `the local model server exited unexpectedly (exit code ${outcome.code ?? 'null: killed by a signal'})`,
          served.logFile ? `see its log: ${served.logFile}` : undefined,
        );
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    });
};
