import { z } from 'zod';
import { count, envName, hostName, HOUR_S, name, nonNegInt, posInt, timeoutS } from '../fields.js';

/** The port `massgen-rl gateway` listens on without --port or gateway.port. */
export const DEFAULT_GATEWAY_PORT = 8330;

export const gatewaySchema = z.strictObject({
  host: hostName
    .default('127.0.0.1')
    .describe('address the gateway listens on; without api_keys_env only a loopback address is allowed'),
  port: nonNegInt.max(65535).default(DEFAULT_GATEWAY_PORT).describe('port of the gateway; 0 picks a free one'),
  api_keys_env: z
    .array(envName)
    .max(64)
    .default([])
    .describe(
      'environment variables each holding a key clients send as `Authorization: Bearer '
        + '<key>` (the trace receiver, /v1/traces, also takes the key bare, as Logfire sends it); the keys are '
        + 'never stored or logged (none: loopback clients only)',
    ),
  session_idle_s: timeoutS()
    .default(300)
    .describe(
      'a session without X-Session-Id or `user` ends after this long without a '
        + "call from its client; any session's rollout is closed after this long idle",
    ),
  flush_ms: posInt
    .max(60_000)
    .default(200)
    .describe('captured calls wait at most this long in memory before they are written (one transaction per batch)'),
  batch_size: count(100_000).default(256).describe('captured calls that trigger a write before flush_ms'),
  aliases: z
    .record(name, z.strictObject({ model: name, agent: z.string().min(1).max(256).optional() }))
    .default({})
    .describe(
      'model names clients may send instead of a config model: each routes to '
        + '`model` and, with `agent`, names the agent of its calls (as X-Agent-Id does)',
    ),
  agents: z
    .record(
      z.string().min(1).max(256),
      z.strictObject({
        system_prompt: z
          .enum(['client', 'production'])
          .default('client')
          .describe(
            "client: the client's system message is sent as it came; production: it is replaced by the "
              + "agent's system prompt in the production resource set (prepended when the client sent none)",
          ),
      }),
    )
    .default({})
    .describe("per config agent id (named by X-Agent-Id or an alias's `agent`): what the gateway does to its calls"),
  max_body_bytes: count(1 << 30)
    .default(32 * 1024 * 1024)
    .describe('a larger request body is refused (413)'),
  max_header_bytes: count(1 << 20)
    .default(64 * 1024)
    .describe('the request line and headers together; more is refused (431)'),
  max_headers: count(10_000).default(100).describe('more header lines are refused (431)'),
  max_connections: count(1_000_000)
    .default(1024)
    .describe('connections open at once; more are answered 503 and closed'),
  max_connections_per_client: count(1_000_000)
    .default(512)
    .describe('connections open at once from one client address; more are answered 429 and closed'),
  request_timeout_s: timeoutS(HOUR_S)
    .default(60)
    .describe('a client must send its whole request (headers and body) within this long (408)'),
  write_timeout_s: timeoutS(HOUR_S)
    .default(60)
    .describe('a client that reads nothing of its response for this long is disconnected'),
  holdout: z
    .number()
    .min(0)
    .max(0.9)
    .default(0.1)
    .describe(
      'share of captured sessions (picked by a hash of the rollout id) kept out of training data for evaluation replay',
    ),
});

export type GatewayConfig = z.output<typeof gatewaySchema>;
