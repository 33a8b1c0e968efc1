import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { selectTasks, splitOf, splitPoint, withSplits, type SplitTask } from '../../src/tasks/index.js';

describe('splitOf', () => {
  // Fixed values: if the hash or its mapping ever changes, every stored split moves, so this must fail.
  it('puts known ids where they always were', () => {
    const expected: [string, number, 'train' | 'eval'][] = [
      ['geo-1', 0.8020996061692995, 'train'],
      ['math-1', 0.3359526515223723, 'train'],
      ['suite:arithmetic:1:0', 0.42041047768482276, 'train'],
      ['suite:multi_step:7:3', 0.05866411629428314, 'eval'],
      ['c', 0.16147974607542137, 'eval'],
      ['task-0042', 0.2370745751746055, 'train'],
    ];
    for (const [id, point, split] of expected) {
      expect(splitPoint(id, 'massgen-rl')).toBe(point);
      expect(splitOf(id, 0.2, 'massgen-rl')).toBe(split);
    }
    expect(splitOf('geo-1', 0.5, 'other')).toBe('eval');
    expect(splitOf('math-1', 0.5, 'other')).toBe('train');
  });

  it('is the first 52 bits of sha256(salt NUL id) as a fraction', () => {
    const point = (id: string, salt: string) =>
      Number(BigInt(`0x${createHash('sha256').update(`${salt}\u0000${id}`).digest('hex')}`) >> 204n) / 2 ** 52;
    for (const id of ['x', 'suite:unit_conversion:3:17', 'ünïcode-id'])
      expect(splitPoint(id, 'salty')).toBe(point(id, 'salty'));
  });

  it('gives an eval share close to eval_fraction over 10k ids', () => {
    for (const fraction of [0.1, 0.2, 0.5]) {
      let evals = 0;
      for (let i = 0; i < 10_000; i++) if (splitOf(`task-${i}`, fraction, 'massgen-rl') === 'eval') evals++;
      // 4 standard deviations of a binomial: fails by chance about once in 15,000 changes of the hash.
      expect(Math.abs(evals / 10_000 - fraction)).toBeLessThan(4 * Math.sqrt((fraction * (1 - fraction)) / 10_000));
    }
  });

  it('puts everything in train at 0 and in eval at 1; the salt reshuffles', () => {
    const ids = Array.from({ length: 200 }, (_, i) => `id-${i}`);
    expect(ids.every((id) => splitOf(id, 0, 's') === 'train')).toBe(true);
    expect(ids.every((id) => splitOf(id, 1, 's') === 'eval')).toBe(true);
    const a = ids.map((id) => splitOf(id, 0.5, 'one'));
    const b = ids.map((id) => splitOf(id, 0.5, 'two'));
    expect(a).not.toEqual(b);
    expect(splitPoint('ab', 'c')).not.toBe(splitPoint('b', 'ca'));
  });
});

describe('selectTasks', () => {
  const tasks: SplitTask[] = withSplits(
    Array.from({ length: 50 }, (_, i) => ({ id: `t${i}`, prompt: `p${i}`, metadata: {}, source: 'x' })),
    0.3,
    'massgen-rl',
  );

  it('filters by split in loaded order and takes the first n', () => {
    const train = selectTasks(tasks, 'train');
    const evals = selectTasks(tasks, 'eval');
    expect(train.length + evals.length).toBe(50);
    expect(train.every((t) => t.split === 'train') && evals.every((t) => t.split === 'eval')).toBe(true);
    expect(train.map((t) => t.id)).toEqual(tasks.filter((t) => t.split === 'train').map((t) => t.id));
    expect(selectTasks(tasks, 'train', 3)).toEqual(train.slice(0, 3));
    expect(selectTasks(tasks, 'all')).toEqual(tasks);
    expect(selectTasks(tasks, 'all', 1000)).toHaveLength(50);
    expect(selectTasks(tasks, 'eval', 0)).toEqual([]);
    expect(() => selectTasks(tasks, 'all', 1.5)).toThrow(RangeError);
  });
});
