import { randomBytes } from 'node:crypto';

// Random suffixes are drawn from a pooled buffer: one randomBytes call per 1,000 ids.
let pool = Buffer.alloc(0);
let offset = 0;

/** Time-sortable ids: prefix, millisecond timestamp (base36), random suffix. */
export function newId(prefix: string): string {
  if (offset + 5 > pool.length) {
    pool = randomBytes(5000);
    offset = 0;
  }
  const suffix = pool.toString('hex', offset, offset + 5);
  offset += 5;
  return `${prefix}_${Date.now().toString(36).padStart(9, '0')}${suffix}`;
}
