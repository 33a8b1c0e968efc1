import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { UserError } from '../errors.js';
import type { Runtime } from '../runtime/runtime.js';
import { Arms } from './arms.js';
import { GatewayAuth } from './auth.js';
import { Backends } from './backends.js';
import { CanaryModels } from './canary-models.js';
import { Capture, type CaptureStats } from './capture.js';
import { CaptureJournal } from './journal.js';
import { guardConnections, serverOptions } from './limits.js';
import { GatewayMetrics } from './metrics.js';
import { recoverJournals, type Recovered } from './recover.js';
import { handleRequest } from './routes.js';
import { Sessions } from './sessions.js';
import { SetModels } from './set-models.js';
import { SystemPrompts } from './system-prompt.js';

export interface GatewayOptions {
  host?: string;
  port?: number;
  /** Overrides gateway.session_idle_s, in ms (tests). */
  sessionIdleMs?: number;
  flushMs?: number;
  batchSize?: number;
  /** How often the production and canary pointers are read again, in ms (default 1000). */
  armsRefreshMs?: number;
  onError?: (err: unknown) => void;
}

export interface Gateway {
  /** e.g. http://127.0.0.1:8330 (clients use `${url}/v1`). */
  url: string;
  /** No client keys: loopback clients only. */
  open: boolean;
  models: string[];
  capture: CaptureStats;
  /** What a gateway of this host that died had journaled but not stored, written at this start. */
  recovered: Recovered;
  /** Writes the calls captured so far (they are otherwise written within gateway.flush_ms). */
  flush(): Promise<void>;
  /** Stops taking requests, lets those in flight finish, ends every session and writes every captured call. */
  stop(): Promise<void>;
}

/** Starts the gateway on the runtime's config models; the caller keeps the runtime open until stop() resolves. */
export async function startGateway(rt: Runtime, opts: GatewayOptions = {}): Promise<Gateway> {
  const cfg = rt.config.gateway;
  const host = opts.host ?? cfg.host;
  const auth = new GatewayAuth(cfg.api_keys_env, rt.env);
  auth.checkHost(host);
  const idleMs = opts.sessionIdleMs ?? cfg.session_idle_s * 1000;
  const sessions = new Sessions(idleMs);
  const journalDir = path.join(rt.paths.dataDir, 'gateway');
  const recovered = await recoverJournals(rt.store(), journalDir);
  const journal = new CaptureJournal(journalDir, rt.store().redactor, opts.onError);
  const capture = new Capture(rt.store(), sessions, {
    journal,
    flushMs: opts.flushMs ?? cfg.flush_ms,
    batchSize: opts.batchSize ?? cfg.batch_size,
    onError: opts.onError,
    weights: rt.config.rewards.weights,
  });
  const limits = cfg;
  const metrics = new GatewayMetrics({
    capture: capture.stats,
    openSessions: () => sessions.size,
    unjournaled: () => journal.unjournaled,
  });
  const systemPrompts = new SystemPrompts(rt.store(), cfg.agents);
  const setModels = new SetModels(rt);
  const canaryModels = new CanaryModels(rt, setModels, opts.onError);
  const arms = new Arms(rt.store(), {
    idleMs,
    refreshMs: opts.armsRefreshMs,
    onChange: (before, after) => canaryModels.retire(before, after),
  });
  const ctx = {
    auth,
    backends: new Backends(rt),
    arms,
    canaryModels,
    setModels,
    sessions,
    capture,
    metrics,
    store: rt.store(),
    weights: rt.config.rewards.weights,
    limits,
    redactor: rt.store().redactor,
    systemPrompts,
  };
  const inflight = new Set<Promise<void>>();
  const server = http.createServer({ keepAliveTimeout: 65_000, ...serverOptions(limits) }, (req, res) => {
    if (guard.refused.has(req.socket)) return;
    res.on('error', () => {});
    const done = handleRequest(ctx, req, res).catch((err: unknown) => opts.onError?.(err));
    inflight.add(done);
    void done.finally(() => inflight.delete(done));
  });
  server.maxHeadersCount = limits.max_headers + 1;
  const guard = guardConnections(server, limits);
  await new Promise<void>((resolve, reject) => {
    const port = opts.port ?? cfg.port;
    server.once('error', (err) => {
      journal.close();
      reject(listenError(err, host, port));
    });
    server.listen(port, host, () => resolve());
  });
  server.on('error', (err) => opts.onError?.(err));
  const sweep = setInterval(
    () => {
      capture.sweep();
      arms.sweep();
    },
    Math.max(50, Math.min(idleMs / 2, 30_000)),
  );
  const { address, port } = server.address() as AddressInfo;
  const shown = address.includes(':') ? `[${address}]` : address;
  let stopping: Promise<void> | undefined;
  return {
    url: `http://${shown}:${port}`,
    open: auth.open,
    models: ctx.backends.names(),
    capture: capture.stats,
    recovered,
    flush: () => capture.flush(),
    stop: () =>
      (stopping ??= (async () => {
        clearInterval(sweep);
        guard.stop();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        await Promise.allSettled([...inflight]);
        journal.sync(); // the last responses end before their connections close
        server.closeAllConnections();
        await closed;
        await capture.close();
      })()),
  };
}

const LISTEN_FAILURES: Record<string, string> = {
  EADDRINUSE: 'the address is in use (another gateway or server?)',
  EACCES: 'permission denied (a port below 1024?)',
  EADDRNOTAVAIL: 'the address is not one of this machine',
};

/** A listen that failed for a reason the user can fix, as a UserError naming the address and the settings. */
function listenError(err: unknown, host: string, port: number): unknown {
  const why = LISTEN_FAILURES[(err as NodeJS.ErrnoException).code ?? ''];
  if (!why) return err;
  return new UserError(
    `gateway: cannot listen on ${host}:${port}: ${why}`,
    'choose another with --port or gateway.port (--host or gateway.host)',
  );
}
