import { describe, expect, it } from 'vitest';
import { BoundedCache } from '../../src/util/bounded-cache.js';

describe('BoundedCache', () => {
  it('makes a value once per key and returns the same one after', () => {
    const cache = new BoundedCache<string, { key: string; n: number }>(4);
    let made = 0;
    const make = (key: string) => ({ key, n: ++made });
    const a = cache.get('a', make);
    expect(cache.get('a', make)).toBe(a);
    expect(cache.get('b', make)).toEqual({ key: 'b', n: 2 });
    expect(made).toBe(2);
  });

  it('starts over when full instead of growing', () => {
    const cache = new BoundedCache<number, object>(2);
    const first = cache.get(1, () => ({}));
    cache.get(2, () => ({}));
    cache.get(3, () => ({})); // full: the cache is emptied, then holds 3
    expect(cache.get(1, () => ({}))).not.toBe(first);
  });
});
