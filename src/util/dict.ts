/**
 * An empty object without a prototype, for counts and lookups keyed by names users choose (task
 * categories, agent ids, rubric criteria): on a plain `{}`, `d['constructor'] ?? 0` is a function and
 * `d['__proto__'] = x` changes the prototype instead of storing x.
 */
export function dict<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}
