// The gateway of the gateway benchmark, in its own process (as it is deployed): started on the config in
// argv[2]'s folder, it reports its URL, then its capture figures when asked, and stops on 'stop'.
import { loadConfig } from '../../dist/config/load.js';
import { gateway } from '../../dist/pipeline/serve/gateway.js';
import { Runtime } from '../../dist/runtime/runtime.js';

const rt = new Runtime(loadConfig({ cwd: process.argv[2] }));
const gw = await gateway(rt, { port: 0, onError: (err) => process.stderr.write(`gateway: ${err?.message ?? err}\n`) });
process.send({ url: gw.url });
process.on('message', async (m) => {
  if (m === 'stats') return process.send({ stats: { ...gw.capture } });
  if (m === 'cpu') {
    const { user, system } = process.cpuUsage();
    return process.send({ cpuMs: (user + system) / 1000 });
  }
  if (m === 'servers') return process.send({ servers: (await rt.servers.running()).map((s) => s.baseUrl) });
  if (m !== 'stop') return;
  const t0 = performance.now();
  await gw.stop();
  const stopMs = performance.now() - t0;
  await rt.close();
  process.send({ stats: { ...gw.capture }, stopMs }, () => process.exit(0));
});
