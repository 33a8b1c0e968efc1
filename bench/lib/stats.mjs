/** Summary statistics for repeated timings. */
import { quantile } from 'simple-statistics';

export function median(values) {
  if (!values.length) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export function describe(values) {
  return { n: values.length, median: median(values), min: Math.min(...values), max: Math.max(...values) };
}

/** Median of the per-round ratios a[i]/b[i]: robust to noise that drifts over the run. */
export function pairedRatio(a, b) {
  return median(a.map((x, i) => x / b[i]));
}

export function roundTo(value, digits = 3) {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

/** The p-quantile (0..1) of values, interpolated between neighbours; NaN for none. */
export function percentile(values, p) {
  return values.length ? quantile(values, p) : Number.NaN;
}

/** A bootstrap interval ({mean, low, high}) rounded to 4 digits; null stays null. */
export function roundInterval(d) {
  return d ? { mean: roundTo(d.mean, 4), low: roundTo(d.low, 4), high: roundTo(d.high, 4) } : null;
}
