import { InvalidArgumentError } from 'commander';
import { UserError } from '../errors.js';

/** The most rows a listing flag (--limit) asks for. */
export const MAX_LIST = 1_000_000;

/** A number written in decimal (an exponent allowed): Number() would also read 0x10 as 16, 0b1 and 0o7. */
export const DECIMAL = /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?\s*$/i;

/** A flag value that must be a finite decimal number; undefined stays undefined. */
export function decimalNumber(flag: string, v: string): number;
export function decimalNumber(flag: string, v: string | undefined): number | undefined;
export function decimalNumber(flag: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!DECIMAL.test(v) || !Number.isFinite(n)) throw new UserError(`${flag} ${v}: expected a decimal number`);
  return n;
}

/**
 * A flag value that must be a whole number (written in decimal) from min (1 unless 0) to max; undefined
 * stays undefined. The one parser of integer flags.
 */
export function wholeNumber(flag: string, v: string, max: number, min?: 0 | 1): number;
export function wholeNumber(flag: string, v: string | undefined, max: number, min?: 0 | 1): number | undefined;
export function wholeNumber(flag: string, v: string | undefined, max: number, min: 0 | 1 = 1): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!DECIMAL.test(v) || !Number.isInteger(n) || n < min) {
    const expected = min === 1 ? 'a positive whole number' : 'a whole number (0, 1, …)';
    throw new UserError(`${flag} ${v}: expected ${expected}`);
  }
  if (n > max) throw new UserError(`${flag} ${v}: at most ${max}`);
  return n;
}

/** A commander parser for --port: a whole number from 0 to 65535 (0 picks a free one). */
export function portFlag(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535)
    throw new InvalidArgumentError('a port number from 0 to 65535 (0 picks a free one)');
  return port;
}
