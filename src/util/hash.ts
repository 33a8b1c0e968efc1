import { createHash } from 'node:crypto';

/** JSON with object keys sorted, so equal values always serialize (and hash) the same. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

export function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export function stableHash(value: unknown): string {
  return sha256(canonicalJson(value)).slice(0, 16);
}

/**
 * Where a key falls in [0, 1), the same on every machine and run: `unitHash(k, salt) < share` picks a stable
 * share of keys (a session's canary arm, a rollout's held-out split); different salts pick independently.
 */
export function unitHash(key: string, salt: string): number {
  return createHash('sha256').update(salt).update('\0').update(key).digest().readUInt32BE(0) / 2 ** 32;
}
