/** Summary statistics for repeated timings. */

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
