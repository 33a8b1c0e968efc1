import { execa } from 'execa';
import { BIN } from '../helpers.js';

/** What `massgen-rl --json gateway` prints once it listens. */
export interface GatewayStarted {
  baseUrl: string;
  auth: string;
  recovered?: { calls: number };
}

/**
 * `massgen-rl --json gateway --port PORT` (0: a free one) in dir, and the JSON it prints once it listens; `ready`
 * rejects with its stderr when it exits first.
 */
export function startGatewayCli(dir: string, opts: { port?: number; env?: Record<string, string> } = {}) {
  const child = execa(process.execPath, [BIN, '--json', 'gateway', '--port', String(opts.port ?? 0)], {
    cwd: dir,
    reject: false,
    stdin: 'ignore',
    env: { NO_COLOR: '1', ...opts.env },
  });
  const ready = new Promise<GatewayStarted>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      try {
        const printed = JSON.parse(out) as Partial<GatewayStarted>;
        // anything else it prints whole is the error it exits with (`--json` prints errors on stdout too)
        if (typeof printed.baseUrl === 'string') resolve(printed as GatewayStarted);
      } catch {
        /* not all of it yet */
      }
    });
    void child.then((r) => reject(new Error(`the gateway exited: ${out.trim()} ${String(r.stderr)}`)));
  });
  return { child, ready };
}
