import { describeWhen } from './describe-when.js';
import { MASSGEN_VERSION, SETUP_SCRIPT, massgenAvailability } from './massgen.js';

/**
 * describe() for tests that run the real MassGen. Without it: in CI (CI=true) every test of the block fails
 * with the reason and how to install; elsewhere the block is skipped, the reason in its name and on stderr.
 */
export function describeWithMassgen(name: string, fn: () => void): void {
  const how = `install it with ${SETUP_SCRIPT} (or set MASSGEN_VENV to a venv holding massgen==${MASSGEN_VERSION})`;
  describeWhen(massgenAvailability(), { tag: 'massgen', what: 'real MassGen', how }, name, fn);
}
