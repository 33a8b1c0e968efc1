/** A number as text with `digits` decimals; '—' for one that is missing or not finite (a table's empty cell). */
export function fixed(x: number | null | undefined, digits = 3): string {
  return x === null || x === undefined || !Number.isFinite(x) ? '—' : x.toFixed(digits);
}
