import { randomBytes } from 'node:crypto';

/** Time-sortable ids: prefix, millisecond timestamp (base36), random suffix. */
export function newId(prefix: string): string {
  return `${prefix}_${Date.now().toString(36).padStart(9, '0')}${randomBytes(5).toString('hex')}`;
}
