import { UserError } from '../errors.js';

/** A flag value that must be a whole number ≥ 1; undefined stays undefined. */
export function positiveInt(flag: string, v: string): number;
export function positiveInt(flag: string, v: string | undefined): number | undefined;
export function positiveInt(flag: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new UserError(`${flag} ${v}: expected a positive whole number`);
  return n;
}
