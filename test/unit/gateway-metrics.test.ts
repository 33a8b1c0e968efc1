import { describe, expect, it } from 'vitest';
import { Counter, Histogram, sampled } from '../../src/gateway/prom-text.js';
import { Sessions } from '../../src/gateway/sessions.js';

describe('Prometheus text', () => {
  it('escapes label values and keeps one series per label set', () => {
    const c = new Counter('x_total', 'Help with a \\ and\na newline.');
    c.inc({ route: 'a"b\\c\nd' });
    c.inc({ route: 'a"b\\c\nd' }, 2);
    c.inc({ route: 'e' });
    expect(c.render()).toBe(
      '# HELP x_total Help with a \\\\ and\\na newline.\n# TYPE x_total counter\n'
        + 'x_total{route="a\\"b\\\\c\\nd"} 3\nx_total{route="e"} 1\n',
    );
  });

  it('counts histogram buckets cumulatively, with +Inf, sum and count', () => {
    const h = new Histogram('lat_seconds', 'Latency.', [0.1, 1]);
    for (const v of [0.05, 0.1, 0.5, 3]) h.observe({ model: 'm' }, v);
    expect(h.render().split('\n').slice(2, -1)).toEqual([
      'lat_seconds_bucket{model="m",le="0.1"} 2',
      'lat_seconds_bucket{model="m",le="1"} 3',
      'lat_seconds_bucket{model="m",le="+Inf"} 4',
      'lat_seconds_sum{model="m"} 3.65',
      'lat_seconds_count{model="m"} 4',
    ]);
    expect(sampled('g', 'A gauge.', 'gauge', [[{}, 7]])).toBe('# HELP g A gauge.\n# TYPE g gauge\ng 7\n');
  });
});

describe('sessions for feedback', () => {
  it("finds an open session by the id its client gave, and a recent call's session", () => {
    const s = new Sessions(1000, () => 0);
    const a = s.touch({ header: 'h1', client: 'A', remote: '' }, 0, 'call_1', 'writer');
    const b = s.touch({ user: 'u1', client: 'A', remote: '' }, 0, 'call_2');
    expect(s.named('A', 'h1')).toBe(a);
    expect(s.named('A', 'u1')).toBe(b);
    expect(s.named('B', 'h1')).toBeUndefined();
    expect(s.ofCall('call_1')).toBe(a);
    expect([...a.agents]).toEqual(['writer']);
    s.close(true);
    expect(s.named('A', 'h1')).toBeUndefined();
    expect(s.ofCall('call_1')).toBe(a);
  });
});
