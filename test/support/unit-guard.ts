import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

/**
 * Setup file of the unit tier (vitest.config.ts): a unit test runs in its own process only. Starting a child
 * process or listening on a socket throws, naming the tier the test belongs in, so the fast tier stays fast
 * and needs nothing installed. ESM importers (execa included) see the replaced functions through
 * syncBuiltinESMExports.
 */
const refuse = (what: string) => () => {
  throw new Error(`a unit test ${what}; this file belongs in test/integration or test/e2e (see CONTRIBUTING.md)`);
};

for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const) {
  Object.defineProperty(childProcess, name, { value: refuse(`starts a process (child_process.${name})`) });
}
net.Server.prototype.listen = refuse('listens on a socket (a server belongs in integration)') as never;
syncBuiltinESMExports();
