/**
 * A process-wide cache that holds at most `limit` entries and starts over when full: for values keyed by
 * settings (clients, redactors, constant prompt parts) that later runs in the same process reuse, without
 * growing for ever in a long-lived process that meets ever new settings.
 */
export class BoundedCache<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly limit: number) {}

  /** The cached value for key, made (and kept) on first use. */
  get(key: K, make: (key: K) => V): V {
    let value = this.entries.get(key);
    if (value === undefined) {
      if (this.entries.size >= this.limit) this.entries.clear();
      this.entries.set(key, (value = make(key)));
    }
    return value;
  }
}
