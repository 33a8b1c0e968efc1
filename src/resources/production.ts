import type { ResourceSet, Store } from '../store/index.js';

/** The production set as the store holds it (a read: pipeline/production-sync.ts brings it up to date). */
export function readProduction(store: Store): ResourceSet | undefined {
  const pointer = store.sets.pointer('production');
  return pointer ? store.sets.get(pointer.setId) : undefined;
}

/** The canary set and the share of rollouts it serves, when a canary runs. */
export function canary(store: Store): { set: ResourceSet; fraction: number } | undefined {
  const p = store.sets.pointer('canary');
  const set = p && store.sets.get(p.setId);
  return set && p.fraction ? { set, fraction: p.fraction } : undefined;
}
