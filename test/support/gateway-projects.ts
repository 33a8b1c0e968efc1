import { afterEach } from 'vitest';
import type { Gateway } from '../../src/pipeline/serve/gateway.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { ChatBackend } from './chat-backend.js';

/** What every gateway test project holds: stopped in this order after each test. */
export interface GatewayParts {
  backend: ChatBackend;
  rt: Runtime;
  gw: Gateway;
}

/**
 * The gateways a test file starts: `track(p)` registers one, and after each test every one tracked is
 * stopped, then its runtime closed and its scripted backend closed.
 */
export function gatewayProjects<P extends GatewayParts>(): (p: P) => P {
  const open: P[] = [];
  afterEach(async () => {
    for (const p of open.splice(0)) {
      await p.gw.stop();
      await p.rt.close();
      await p.backend.close();
    }
  });
  return (p) => {
    open.push(p);
    return p;
  };
}
