import { once } from 'node:events';
import { DEFAULT_GATEWAY_PORT } from '../../config/schema.js';
import { errorMessage } from '../../errors.js';
import { portFlag } from '../flags.js';
import { withInterrupt } from '../interrupt.js';
import type { Register } from '../register.js';

interface GatewayFlags {
  host?: string;
  port?: number;
}

export const registerGateway: Register = (program, ctx) => {
  program
    .command('gateway')
    .description('an OpenAI-compatible endpoint for your own agents: routes to the config models, captures every call')
    .option('--host <h>', 'address to listen on (default: gateway.host, 127.0.0.1)')
    .option('--port <n>', `port; 0 picks a free one (default: gateway.port, ${DEFAULT_GATEWAY_PORT})`, portFlag)
    .action(async (flags: GatewayFlags) => {
      const { ui, runtime } = ctx();
      const { gateway } = await import('../../pipeline/serve/gateway.js');
      const rt = await runtime();
      await withInterrupt(ui, 'stopping: finishing requests in flight, writing captured calls', async (signal) => {
        const gw = await gateway(rt, {
          host: flags.host,
          port: flags.port,
          onError: (err) => ui.warn(`gateway: ${errorMessage(err)}`),
        });
        const auth = gw.open ? 'loopback-only' : 'keys';
        const { recovered } = gw;
        if (ui.opts.json) ui.json({ ok: true, baseUrl: `${gw.url}/v1`, models: gw.models, auth, recovered });
        else {
          if (recovered.calls) {
            ui.info(`stored ${recovered.calls} calls that a gateway which stopped without writing them had journaled`);
          }
          ui.print(`${gw.url}/v1`);
          ui.info(`models: ${gw.models.join(', ')}`);
          ui.info(
            gw.open
              ? 'no client keys (gateway.api_keys_env): serving loopback clients only'
              : 'clients authenticate with Authorization: Bearer <key> (gateway.api_keys_env)',
          );
          ui.info('Ctrl-C stops the gateway');
        }
        if (!signal.aborted) await once(signal, 'abort');
        await gw.stop();
        ui.info(`gateway stopped (${gw.capture.written} calls captured)`);
      });
    });
};
