/** Runs fn over items with at most `limit` in flight; stops taking new items once the signal aborts. */
export async function pool<T>(
  items: readonly T[],
  limit: number,
  signal: AbortSignal,
  fn: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length && !signal.aborted) {
      const i = next++;
      await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
