import crypto from 'node:crypto';
import { UserError } from '../errors.js';
import { ApiError } from './api-error.js';

/** A configured client key: the environment variable that holds it (the client's name in traces) and its hash. */
interface GatewayKey {
  env: string;
  digest: Buffer;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost|::ffff:127\.\d+\.\d+\.\d+)$/;

export function isLoopback(host: string): boolean {
  return LOOPBACK.test(host.replace(/^\[|\]$/g, ''));
}

function unauthorized(message: string): ApiError {
  return new ApiError(401, message, null, 'invalid_api_key');
}

function sha256(text: string): Buffer {
  return crypto.createHash('sha256').update(text).digest();
}

/**
 * Client authentication: `Authorization: Bearer <key>` against the keys of gateway.api_keys_env, each
 * compared in constant time on SHA-256 digests (equal lengths whatever the key). Without keys, only
 * loopback clients are served.
 */
export class GatewayAuth {
  private readonly keys: GatewayKey[];

  constructor(envNames: readonly string[], env: NodeJS.ProcessEnv) {
    this.keys = envNames.map((name) => {
      const key = env[name];
      if (!key) throw new UserError(`gateway.api_keys_env: environment variable ${name} is not set`);
      return { env: name, digest: sha256(key) };
    });
  }

  get open(): boolean {
    return this.keys.length === 0;
  }

  /** Refuses to listen on a non-loopback address without keys. */
  checkHost(host: string): void {
    if (this.open && !isLoopback(host)) {
      throw new UserError(
        `the gateway listens on ${host} but has no client keys`,
        'set gateway.api_keys_env (environment variables holding the keys), or listen on 127.0.0.1',
      );
    }
  }

  /**
   * The client's name (the variable of its key; `loopback` without keys), or a 401 ApiError. `bareKey`: the key
   * may also come without the Bearer scheme (Logfire's OTLP exporters send `Authorization: <token>`).
   */
  check(authorization: string | undefined, remote: string | undefined, bareKey = false): string {
    if (this.open) {
      if (remote !== undefined && isLoopback(remote)) return 'loopback';
      throw unauthorized('the gateway has no client keys and serves loopback clients only');
    }
    const key =
      /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1]
      ?? (bareKey ? /^(\S+)$/.exec(authorization ?? '')?.[1] : undefined);
    if (!key) throw unauthorized('missing the API key: send Authorization: Bearer <key>');
    const digest = sha256(key);
    let found: string | undefined;
    // Every key is compared, so the time taken does not say which one matched.
    for (const k of this.keys) if (crypto.timingSafeEqual(k.digest, digest) && found === undefined) found = k.env;
    if (found === undefined) throw unauthorized('incorrect API key');
    return found;
  }
}
