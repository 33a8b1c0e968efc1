import { UserError } from '../errors.js';

/** The most rows a listing flag (--limit) asks for. */
export const MAX_LIST = 1_000_000;

/** A flag value that must be a whole number from 1 to max; undefined stays undefined. */
export function positiveInt(flag: string, v: string, max: number): number;
export function positiveInt(flag: string, v: string | undefined, max: number): number | undefined;
export function positiveInt(flag: string, v: string | undefined, max: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (v.trim() === '' || !Number.isInteger(n) || n < 1) throw new UserError(`${flag} ${v}: expected a positive whole number`);
  if (n > max) throw new UserError(`${flag} ${v}: at most ${max}`);
  return n;
}
