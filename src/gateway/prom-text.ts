/**
 * Prometheus metrics in the text exposition format (version 0.0.4): counters and histograms with labels,
 * and values read at scrape time. Label values are escaped; names are the caller's constants.
 */
export const PROM_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

type Labels = Record<string, string>;

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(
    ([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')}"`,
  );
  return parts.length ? `{${parts.join(',')}}` : '';
}

function num(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (!Number.isFinite(v)) return v > 0 ? '+Inf' : '-Inf';
  return String(v);
}

function header(name: string, help: string, type: string): string {
  return `# HELP ${name} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}\n# TYPE ${name} ${type}\n`;
}

export class Counter {
  private readonly values = new Map<string, { labels: Labels; value: number }>();

  constructor(
    readonly name: string,
    private readonly help: string,
  ) {}

  inc(labels: Labels = {}, by = 1): void {
    const key = labelText(labels);
    const v = this.values.get(key);
    if (v) v.value += by;
    else this.values.set(key, { labels, value: by });
  }

  render(): string {
    let out = header(this.name, this.help, 'counter');
    for (const { labels, value } of this.values.values()) out += `${this.name}${labelText(labels)} ${num(value)}\n`;
    return out;
  }
}

interface Series {
  labels: Labels;
  counts: number[];
  sum: number;
  count: number;
}

export class Histogram {
  private readonly series = new Map<string, Series>();

  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly buckets: readonly number[],
  ) {}

  observe(labels: Labels, value: number): void {
    const key = labelText(labels);
    let s = this.series.get(key);
    if (!s) {
      s = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]!) s.counts[i]!++;
    s.sum += value;
    s.count++;
  }

  render(): string {
    let out = header(this.name, this.help, 'histogram');
    for (const s of this.series.values()) {
      this.buckets.forEach((le, i) => {
        out += `${this.name}_bucket${labelText({ ...s.labels, le: num(le) })} ${s.counts[i]}\n`;
      });
      out += `${this.name}_bucket${labelText({ ...s.labels, le: '+Inf' })} ${s.count}\n`;
      out += `${this.name}_sum${labelText(s.labels)} ${num(s.sum)}\n`;
      out += `${this.name}_count${labelText(s.labels)} ${s.count}\n`;
    }
    return out;
  }
}

/** A metric read at scrape time: a gauge, or a counter another part keeps (one sample per label set). */
export function sampled(
  name: string,
  help: string,
  type: 'gauge' | 'counter',
  samples: readonly [Labels, number][],
): string {
  return header(name, help, type) + samples.map(([l, v]) => `${name}${labelText(l)} ${num(v)}\n`).join('');
}
