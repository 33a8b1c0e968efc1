import { beforeEach, describe } from 'vitest';
import { MASSGEN_VERSION, SETUP_SCRIPT, massgenAvailability } from './massgen.js';

/**
 * describe() for tests that run the real MassGen. Without it: in CI (CI=true) every test of the block fails
 * with the reason and how to install; elsewhere the block is skipped, the reason in its name and on stderr.
 */
export function describeWithMassgen(name: string, fn: () => void): void {
  const found = massgenAvailability();
  if (found.ok) return void describe(name, fn);
  const how = `install it with ${SETUP_SCRIPT} (or set MASSGEN_VENV to a venv holding massgen==${MASSGEN_VERSION})`;
  if (process.env.CI === 'true') {
    return void describe(name, () => {
      beforeEach(() => {
        throw new Error(`${found.reason}: CI must run the real MassGen tests; ${how}`);
      });
      fn();
    });
  }
  process.stderr.write(`[massgen] skipping "${name}": ${found.reason}; ${how}\n`);
  describe.skip(`${name} [skipped: ${found.reason}]`, fn);
}
