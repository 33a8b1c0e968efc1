import { describe, expect, it } from 'vitest';
import { StatsCollector } from '../../src/datasets/stats.js';
import { quotas, suiteShareSink } from '../../src/datasets/suite-share.js';
import type { DatasetRow } from '../../src/datasets/types.js';

const row = (task: string, i: number) =>
  ({ prompt: [], chosen: [], rejected: [], margin: 1, meta: { task_id: task, i } }) as unknown as DatasetRow;

describe('train.dpo.max_suite_share', () => {
  it('shrinks the largest suites until none is above the share of what is kept', () => {
    const q = quotas(
      new Map([
        ['units', 100],
        ['arith', 10],
        ['strings', 10],
      ]),
      0.4,
    );
    const total = [...q.values()].reduce((a, b) => a + b, 0);
    expect(q.get('arith')).toBe(10);
    expect(q.get('strings')).toBe(10);
    expect(q.get('units')! / total).toBeLessThanOrEqual(0.4);
    expect(q.get('units')).toBe(13);
    // already within the share: unchanged
    expect(
      quotas(
        new Map([
          ['a', 3],
          ['b', 3],
          ['c', 4],
        ]),
        0.4,
      ),
    ).toEqual(
      new Map([
        ['a', 3],
        ['b', 3],
        ['c', 4],
      ]),
    );
  });

  it('keeps each task of a capped suite its first pairs, round-robin, and counts the rest as dropped', () => {
    const stats = new StatsCollector();
    const out: { row: DatasetRow; category: string }[] = [];
    const sink = suiteShareSink(0.25, stats, (r, info) => out.push({ row: r, category: [...info.categories][0]! }));
    // units: 3 tasks × 4 pairs; arith and strings 2 pairs each. Three suites: an even share (1/3) is above 0.25, so
    // each keeps at most a third of what is kept
    for (const t of ['u1', 'u2', 'u3'])
      for (let i = 0; i < 4; i++) sink.emit(row(t, i), { clean: true, categories: ['units/length'], rollouts: [t] });
    for (const s of ['arith', 'strings'])
      for (let i = 0; i < 2; i++)
        sink.emit(row(`${s}1`, i), { clean: true, categories: [`${s}/l0`], rollouts: [`${s}1`] });
    expect(out).toHaveLength(0);
    sink.flush();
    const units = out.filter((o) => o.category.startsWith('units'));
    expect(units).toHaveLength(2);
    expect(out).toHaveLength(6);
    // round-robin: u1's first pair, then u2's first
    expect(units.map((u) => (u.row as unknown as { meta: { task_id: string; i: number } }).meta)).toEqual([
      { task_id: 'u1', i: 0 },
      { task_id: 'u2', i: 0 },
    ]);
    expect(stats.snapshot('dpo', { from: 0, to: 0 }, 0).dropped).toMatchObject({ over_suite_share: 10 });
  });
});
